// AccessLog: one line per HTTP request answered by `folio serve` (server.access_log,
// server.log_format, server.log_level).
//
// A line holds: time (UTC, ISO 8601 with milliseconds, when the answer ended), request id, method,
// path, status, key id (the first 12 hex digits of the API key's SHA-256, never the key; absent
// without keys), model, prompt / cached / completion tokens, queue ms, TTFT ms, duration ms (from
// the request's headers being read to the answer's last byte, streams included) and the finish or
// cancel reason. Fields a request does not have (a probe, a rejected request) are null in JSON and
// left out of text lines. JSON lines are single objects (parse each line on its own).
//
// Levels: status < 400 is info, 400-499 warn, >= 500 error; lines below server.log_level are not
// written. Threads: write() may be called from any thread (spdlog's _mt sinks); lines never
// interleave. Failure: the constructor throws Error(Io) naming the file if it cannot be opened;
// write() never throws (a full disk loses lines, never requests).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace spdlog {
class logger;
}

namespace folio {

struct AccessRecord {
  std::chrono::steady_clock::time_point start{};  // headers read; unset = unknown duration
  std::string request_id, method, path, key_id, model, finish;
  int status = 0;
  std::optional<int64_t> prompt_tokens, cached_tokens, completion_tokens;
  std::optional<double> queue_ms, ttft_ms;
};

class AccessLog {
 public:
  // target: "-" (stderr), "off", or a file path (appended; the file and its directories are
  // created). format: json | text.
  // level: info | warn | error | off.
  AccessLog(const std::string& target, const std::string& format, const std::string& level);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return logger_ != nullptr; }
  void write(const AccessRecord& r) noexcept;

  // The line write() would emit for r at `now` (UTC wall clock) and `end` (steady clock), without
  // the level filter: what tests check field by field.
  std::string format(const AccessRecord& r, std::chrono::system_clock::time_point now,
                     std::chrono::steady_clock::time_point end) const;

  // The key id of an API key: the first 12 hex digits of its SHA-256.
  static std::string key_id(const std::string& key);

 private:
  std::shared_ptr<spdlog::logger> logger_;
  bool json_ = true;
  int min_level_ = 0;  // 0 info, 1 warn, 2 error, 3 off
};

}  // namespace folio
