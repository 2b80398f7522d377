// ApiError: a request the server refuses, with the HTTP status and OpenAI's error shape
// {"error": {"message", "type", "code"}}.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace folio {

struct ApiError : std::runtime_error {
  int status;
  std::string type;  // invalid_request_error | authentication_error | rate_limit_error | server_error ...
  std::string code;  // machine-readable: invalid_json, model_not_found, queue_full, ...

  ApiError(int status_, std::string type_, std::string code_, const std::string& message)
      : std::runtime_error(message), status(status_), type(std::move(type_)), code(std::move(code_)) {}

  nlohmann::json body() const { return {{"error", {{"message", what()}, {"type", type}, {"code", code}}}}; }
};

// 400 invalid_request_error.
inline ApiError bad_request(const std::string& code, const std::string& message) {
  return ApiError(400, "invalid_request_error", code, message);
}

}  // namespace folio
