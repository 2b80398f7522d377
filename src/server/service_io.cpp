#include "server/service_io.h"

namespace folio {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  res.set_content(dump(e.body()), "application/json");
}

std::string finish_reason(StopReason stop) { return stop == StopReason::Eos || stop == StopReason::StopString ? "stop" : "length"; }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(const SequenceResult& r) {
  const int64_t completion = static_cast<int64_t>(r.tokens.size());
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_prompt_tokens}}}};
}

namespace {
thread_local AccessRecord t_access;  // one request at a time per thread (service_io.h)
}  // namespace

AccessRecord& current_access() { return t_access; }

void note_result(const SequenceResult& r) {
  AccessRecord& a = current_access();
  a.prompt_tokens = r.prompt_tokens;
  a.cached_tokens = r.cached_prompt_tokens;
  a.completion_tokens = static_cast<int64_t>(r.tokens.size());
  a.queue_ms = r.queue_ms;
  a.ttft_ms = r.ttft_ms;
  a.finish = r.stop_reason.name();
}

bool client_closed() {
  current_access().finish = "client_closed";
  return false;
}

void note_job(const OcrJob& job) {
  const json u = job.usage();
  current_access().prompt_tokens = u["prompt_tokens"].get<int64_t>();
  current_access().cached_tokens = u["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  current_access().completion_tokens = u["completion_tokens"].get<int64_t>();
  const std::optional<ApiError> e = job.failure();
  current_access().finish = e ? e->code : "stop";
}

void send_sse(DataSink& sink, bool& ok, const json& j) {
  if (!ok) return;
  const std::string s = "data: " + dump(j) + "\n\n";
  ok = sink.write(s.data(), s.size());
}

bool end_sse(DataSink& sink, bool ok) {
  if (!ok) return false;
  const std::string done = "data: [DONE]\n\n";
  if (!sink.write(done.data(), done.size())) return false;
  sink.done();
  return true;
}


// Waits for a job answered whole; false (the job cancelled and counted) when its client went away
// first: polled every 100 ms, so the job's passes stop within a decode step of that.
bool wait_for_job(OcrJob& job, const HttpRequest& req, ServerMetrics& metrics) {
  while (!job.poll(std::chrono::milliseconds(100)).done) {
    if (!req.client_gone()) continue;
    job.cancel();
    metrics.count_cancelled_by_client();
    note_job(job);
    current_access().finish = "client_closed";
    return false;
  }
  return true;
}

// The release hook of a streamed job's response: a client that left before the end cancels the
// job (counted), and the request stops counting as in flight.
std::function<void(bool)> job_released(std::shared_ptr<JobStream> st, ServerMetrics& metrics, std::atomic<int64_t>& in_flight) {
  return [st = std::move(st), &metrics, &in_flight](bool) {
    if (!st->finished) {
      st->job->cancel();
      metrics.count_cancelled_by_client();
    }
    --in_flight;
  };
}

// The SSE pump of a streamed job, for /v1/ocr and for documents sent to /v1/chat/completions:
// `opening` once (when given), one event per page as it becomes final, then the job's error or
// its `closing` event, then [DONE]. It wakes every 100 ms to notice a client that left.
ContentProvider job_pump(std::shared_ptr<JobStream> st, std::optional<json> opening, PageEvent page, ClosingEvent closing) {
  return [st = std::move(st), opening = std::move(opening), page = std::move(page), closing = std::move(closing)](
             size_t, DataSink& sink) {
    OcrJob& job = *st->job;
    bool ok = true;
    if (opening && !st->opened) {
      st->opened = true;
      send_sse(sink, ok, *opening);
    }
    const OcrJob::Progress p = job.poll(std::chrono::milliseconds(100));
    // A client that left mid-page is seen here, not only at the next page's write.
    if (!sink.is_writable()) return client_closed();
    for (size_t i : p.pages) send_sse(sink, ok, page(job, i));
    if (!ok) return client_closed();
    if (!p.done) return true;
    st->finished = true;
    note_job(job);
    if (auto e = job.failure()) send_sse(sink, ok, e->body());
    else send_sse(sink, ok, closing(job));
    return end_sse(sink, ok);
  };
}

}  // namespace folio
