// What the files of the Service (service.cpp, ocr_endpoint.cpp, chat_endpoints.cpp) share about
// answering a request: JSON bodies and errors, the access record of the request this thread is
// answering, the in-flight count, and server-sent events (a job's pages, a stream's end).
//
// Threads: the transport runs a request's handler, content provider and release hook on one
// thread, one request at a time (http_server.h), so the access record is per thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/scheduler.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/http_message.h"
#include "server/metrics.h"
#include "server/ocr_job.h"
#include "server/token_logprobs.h"

namespace folio {

// Generated text can hold invalid UTF-8 (a model may emit any byte tokens); JSON cannot, so such
// bytes become U+FFFD instead of failing the response.
std::string dump(const nlohmann::json& j);
void send_error(HttpResponse& res, const ApiError& e);
// OpenAI's finish_reason for a scheduler stop reason (stop_string: a `stop` string was found).
std::string finish_reason(StopReason stop);
int64_t unix_now();
nlohmann::json usage_json(const SequenceResult& r);

// The access record of the request this thread is answering; reset when the request's headers are
// read and after its line is written.
AccessRecord& current_access();
void note_result(const SequenceResult& r);
// A stream whose client went away: noted, and false for the content provider to return.
bool client_closed();
void note_job(const OcrJob& job);

// Counts a request as in flight until it is destroyed (or released to another owner).
struct InFlight {
  std::atomic<int64_t>* n;
  explicit InFlight(std::atomic<int64_t>& c) : n(&c) { ++*n; }
  ~InFlight() {
    if (n) --*n;
  }
  void release() { n = nullptr; }
};

// A text generation's tokens and result, from the scheduler thread to the HTTP thread answering it.
struct ChatChannel {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;  // one per token when the request asked for logprobs
  size_t taken = 0;
  std::optional<SequenceResult> result;
};

// One server-sent event (nothing once `ok` is false; `ok` turns false when the write fails).
void send_sse(DataSink& sink, bool& ok, const nlohmann::json& j);
// [DONE] and the end of the stream; false when the client is gone.
bool end_sse(DataSink& sink, bool ok);

// An OcrJob answered as SSE: owned by the response, cancelled if the client goes away.
struct JobStream {
  std::unique_ptr<OcrJob> job;
  bool finished = false;
  bool opened = false;  // the pump's opening event was sent
};

// Waits for a job answered whole; false (the job cancelled and counted) when its client went away
// first: polled every 100 ms, so the job's passes stop within a decode step of that.
bool wait_for_job(OcrJob& job, const HttpRequest& req, ServerMetrics& metrics);
// The release hook of a streamed job's response: a client that left before the end cancels the
// job (counted), and the request stops counting as in flight.
std::function<void(bool)> job_released(std::shared_ptr<JobStream> st, ServerMetrics& metrics, std::atomic<int64_t>& in_flight);

// The SSE pump of a streamed job, for /v1/ocr and for documents sent to /v1/chat/completions:
// `opening` once (when given), one event per page as it becomes final, then the job's error or
// its `closing` event, then [DONE]. It wakes every 100 ms to notice a client that left.
using PageEvent = std::function<nlohmann::json(OcrJob&, size_t page)>;
using ClosingEvent = std::function<nlohmann::json(OcrJob&)>;
ContentProvider job_pump(std::shared_ptr<JobStream> st, std::optional<nlohmann::json> opening, PageEvent page,
                         ClosingEvent closing);

}  // namespace folio
