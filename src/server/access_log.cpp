#include "server/access_log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/content_hash.h"
#include "core/error.h"

namespace folio {

namespace {

int level_rank(const std::string& level) {
  if (level == "info") return 0;
  if (level == "warn") return 1;
  if (level == "error") return 2;
  if (level == "off") return 3;
  throw_invalid("server.log_level must be info, warn, error or off, not '" + level + "'");
}

int status_rank(int status) { return status >= 500 ? 2 : status >= 400 ? 1 : 0; }

std::string iso_utc(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

// Milliseconds rounded to 0.1, so lines stay short.
double tenths(double ms) { return static_cast<double>(static_cast<int64_t>(ms * 10 + 0.5)) / 10; }

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

}  // namespace

AccessLog::AccessLog(const std::string& target, const std::string& format, const std::string& level)
    : json_(format == "json"), min_level_(level_rank(level)) {
  if (format != "json" && format != "text") throw_invalid("server.log_format must be json or text, not '" + format + "'");
  if (target == "off" || min_level_ == 3) return;
  // Each AccessLog its own logger, not registered globally (several services may run in one process).
  static std::atomic<int> serial{0};
  const std::string name = "folio-access-" + std::to_string(serial++);
  try {
    if (target == "-") logger_ = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
    else logger_ = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::basic_file_sink_mt>(target));
  } catch (const spdlog::spdlog_ex& e) {
    throw Error(Error::Kind::Io, "server.access_log: cannot open '" + target + "': " + e.what());
  }
  logger_->set_pattern("%v");
  logger_->flush_on(spdlog::level::info);  // a line is on disk when the answer is (tests, tail -f)
}

AccessLog::~AccessLog() = default;

std::string AccessLog::key_id(const std::string& key) { return Sha256().update(key).hex().substr(0, 12); }

std::string AccessLog::format(const AccessRecord& r, std::chrono::system_clock::time_point now,
                              std::chrono::steady_clock::time_point end) const {
  std::optional<double> duration;
  if (r.start != std::chrono::steady_clock::time_point{}) duration = tenths(std::chrono::duration<double, std::milli>(end - r.start).count());
  std::optional<double> queue, ttft;
  if (r.queue_ms) queue = tenths(*r.queue_ms);
  if (r.ttft_ms) ttft = tenths(*r.ttft_ms);
  if (json_) {
    nlohmann::json j = {{"time", iso_utc(now)}, {"request_id", or_null(r.request_id)}, {"method", r.method}, {"path", r.path},
                        {"status", r.status}, {"key_id", or_null(r.key_id)}, {"model", or_null(r.model)},
                        {"prompt_tokens", or_null(r.prompt_tokens)}, {"cached_tokens", or_null(r.cached_tokens)},
                        {"completion_tokens", or_null(r.completion_tokens)}, {"queue_ms", or_null(queue)},
                        {"ttft_ms", or_null(ttft)}, {"duration_ms", or_null(duration)}, {"finish", or_null(r.finish)}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string out = iso_utc(now) + " " + r.method + " " + r.path + " " + std::to_string(r.status);
  auto add = [&out](const char* k, const std::string& v) {
    if (!v.empty()) out += std::string(" ") + k + "=" + v;
  };
  auto num = [](std::optional<double> v) { return v ? nlohmann::json(*v).dump() : std::string(); };
  auto count = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string(); };
  add("id", r.request_id);
  add("key", r.key_id);
  add("model", r.model);
  add("prompt", count(r.prompt_tokens));
  add("cached", count(r.cached_tokens));
  add("completion", count(r.completion_tokens));
  add("queue_ms", num(queue));
  add("ttft_ms", num(ttft));
  add("ms", num(duration));
  add("finish", r.finish);
  return out;
}

void AccessLog::write(const AccessRecord& r) noexcept {
  if (!logger_ || status_rank(r.status) < min_level_) return;
  try {
    const std::string line = format(r, std::chrono::system_clock::now(), std::chrono::steady_clock::now());
    const auto level = status_rank(r.status) == 2 ? spdlog::level::err : status_rank(r.status) == 1 ? spdlog::level::warn : spdlog::level::info;
    logger_->log(level, "{}", line);
  } catch (...) {
    // Losing a log line must not fail the request it describes.
  }
}

}  // namespace folio
