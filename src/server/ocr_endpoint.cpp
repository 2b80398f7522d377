// POST /v1/ocr: PDFs and images in (multipart or JSON with base64 files, ocr_request.h), markdown and
// per-page JSON out, whole or as server-sent events per page (ocr_job.h runs the passes).
#include "server/ocr_request.h"
#include "server/multipart.h"
#include "server/service.h"
#include "server/service_io.h"
#include "server/serving_engine.h"

namespace folio {

using nlohmann::json;

std::unique_ptr<OcrJob> Service::start_ocr_job(std::vector<UploadedFile> files, const std::string& pages, std::optional<int64_t> max_tokens,
                                               bool page_images) {
  OcrJobLimits lim;
  lim.max_pages = static_cast<size_t>(cfg_.server.max_pages);
  lim.max_output_length = cfg_.inference.max_output_length;
  lim.max_reference_length = cfg_.model.max_reference_length;
  lim.timeout_s = cfg_.server.request_timeout_s;
  return engine_->start_ocr_job(std::move(files), pages, max_tokens, lim, model_id_,
                                [this](const SequenceResult& r) { metrics_.record_generation(r); }, page_images);
}

void Service::ocr(const HttpRequest& req, HttpResponse& res) {
  InFlight counted(in_flight_);
  check_loaded(res);
  OcrRequest orq;
  if (req.is_multipart_form_data()) {
    orq = parse_ocr_form(parse_multipart_form(req.get_header_value("Content-Type"), req.body));
  } else {
    orq = parse_ocr_json(req.body);
  }
  check_model(orq.model);
  auto st = std::make_shared<JobStream>();
  st->job = start_ocr_job(std::move(orq.files), orq.pages, orq.max_tokens, orq.page_images);
  const std::string id = ids_.next("ocr");
  const int64_t created = unix_now();

  if (!orq.stream) {
    if (!wait_for_job(*st->job, req, metrics_)) return;
    note_job(*st->job);
    if (auto e = st->job->failure()) throw *e;
    json body = st->job->result();
    body["id"] = id;
    body["created"] = created;
    res.set_content(dump(body), "application/json");
    return;
  }
  // Streaming: one event per page as it becomes final ({"object": "ocr.page", "index", "page"}),
  // then the whole result ({"object": "ocr", ...}), then [DONE].
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      job_pump(
          st, std::nullopt,
          [id](OcrJob& job, size_t i) { return json{{"id", id}, {"object", "ocr.page"}, {"index", i}, {"page", job.page_json(i)}}; },
          [id, created](OcrJob& job) {
            json body = job.result(false);
            body["id"] = id;
            body["created"] = created;
            return body;
          }),
      job_released(st, metrics_, in_flight_));
  counted.release();
}

}  // namespace folio
