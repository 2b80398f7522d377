// ApiError: a request the server refuses, with the HTTP status and OpenAI's error shape
// {"error": {"message", "type", "code"}}.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/scheduler.h"

namespace folio {

struct ApiError : std::runtime_error {
  int status;
  std::string type;  // invalid_request_error | authentication_error | rate_limit_error | server_error ...
  std::string code;  // machine-readable: invalid_json, model_not_found, queue_full, ...
  int64_t retry_after_s = 0;  // > 0: sent as Retry-After (the client may retry then)

  ApiError(int status_, std::string type_, std::string code_, const std::string& message)
      : std::runtime_error(message), status(status_), type(std::move(type_)), code(std::move(code_)) {}

  nlohmann::json body() const { return {{"error", {{"message", what()}, {"type", type}, {"code", code}}}}; }
};

// 400 invalid_request_error.
inline ApiError bad_request(const std::string& code, const std::string& message) {
  return ApiError(400, "invalid_request_error", code, message);
}

// Why the scheduler refused a submission, as an API error (none when it was accepted): a full
// queue is 503 with Retry-After (the request never started, so it may be sent again, here or to
// another replica), a reference that cannot fit the KV budget 400, a stopping scheduler 503.
inline std::optional<ApiError> rejection_error(const Submission& sub) {
  switch (sub.rejected) {
    case Rejection::None: return std::nullopt;
    case Rejection::QueueFull: {
      ApiError e(503, "server_error", "queue_full", "the server is at capacity: " + sub.message + "; retry later");
      e.retry_after_s = 1;
      return e;
    }
    case Rejection::ExceedsKVBudget: return bad_request("kv_budget_exceeded", sub.message);
    case Rejection::Stopped: return ApiError(503, "server_error", "shutting_down", sub.message);
  }
  return std::nullopt;
}

// A generation that did not end normally (timeout 504, cancelled 503, error 500), as an API error.
inline std::optional<ApiError> generation_error(const SequenceResult& r, double timeout_s) {
  if (r.stop_reason == StopReason::Timeout)
    return ApiError(504, "server_error", "timeout",
                    "the request did not finish within server.request_timeout_s (" + std::to_string(timeout_s) + " s)");
  if (r.stop_reason == StopReason::Cancelled) return ApiError(503, "server_error", "shutting_down", "the request was cancelled: the server is shutting down");
  if (r.stop_reason == StopReason::Error) return ApiError(500, "server_error", "generation_failed", "generation failed: " + r.error);
  return std::nullopt;
}

}  // namespace folio
