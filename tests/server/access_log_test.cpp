// AccessLog on its own: both formats field by field, the level filter, the key id, and a file that
// cannot be opened. The lines a running server writes are checked over HTTP in http_test.cpp.
#include "server/access_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/content_hash.h"
#include "core/error.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> lines_of(const fs::path& f) {
  std::ifstream in(f);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

AccessRecord chat_record(std::chrono::steady_clock::time_point start) {
  AccessRecord r;
  r.start = start;
  r.request_id = "trace-7";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.key_id = AccessLog::key_id("sk-secret");
  r.model = "tiny";
  r.prompt_tokens = 12;
  r.cached_tokens = 4;
  r.completion_tokens = 3;
  r.queue_ms = 0.04;
  r.ttft_ms = 5.26;
  r.finish = "length";
  return r;
}

TEST(AccessLog, JsonLineHoldsEveryFieldAndNullForWhatIsUnknown) {
  const AccessLog log("off", "json", "info");
  EXPECT_FALSE(log.enabled());
  const auto start = std::chrono::steady_clock::now();
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796212800123));  // 2026-12-02T12:00:00.123Z
  const json j = json::parse(log.format(chat_record(start), at, start + std::chrono::microseconds(12345)));
  EXPECT_EQ(j["time"], "2026-12-02T12:00:00.123Z");
  EXPECT_EQ(j["request_id"], "trace-7");
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/v1/chat/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["key_id"], Sha256().update("sk-secret").hex().substr(0, 12));
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["cached_tokens"], 4);
  EXPECT_EQ(j["completion_tokens"], 3);
  EXPECT_DOUBLE_EQ(j["queue_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 5.3);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 12.3);
  EXPECT_EQ(j["finish"], "length");
  EXPECT_EQ(j.size(), 14u);
  // A probe: no id, key, model, tokens or finish; no start means no duration.
  AccessRecord probe;
  probe.method = "GET";
  probe.path = "/healthz";
  probe.status = 200;
  const json p = json::parse(log.format(probe, at, start));
  for (const char* k : {"request_id", "key_id", "model", "prompt_tokens", "cached_tokens", "completion_tokens", "queue_ms",
                        "ttft_ms", "duration_ms", "finish"})
    EXPECT_TRUE(p[k].is_null()) << k;
}

TEST(AccessLog, TextLineNamesOnlyWhatIsKnown) {
  const AccessLog log("off", "text", "info");
  const auto start = std::chrono::steady_clock::now();
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796212800123));
  const std::string key = AccessLog::key_id("sk-secret");
  EXPECT_EQ(log.format(chat_record(start), at, start + std::chrono::milliseconds(20)),
            "2026-12-02T12:00:00.123Z POST /v1/chat/completions 200 id=trace-7 key=" + key +
                " model=tiny prompt=12 cached=4 completion=3 queue_ms=0.0 ttft_ms=5.3 ms=20.0 finish=length");
  AccessRecord probe;
  probe.method = "GET";
  probe.path = "/healthz";
  probe.status = 200;
  EXPECT_EQ(log.format(probe, at, start), "2026-12-02T12:00:00.123Z GET /healthz 200");
}

TEST(AccessLog, LevelFiltersByStatusAndLinesNeverHoldTheKey) {
  const fs::path dir = fs::temp_directory_path() / ("folio_access_log_" + std::to_string(getpid()));
  fs::create_directories(dir);
  AccessRecord r = chat_record(std::chrono::steady_clock::now());
  for (const auto& [level, want] : std::vector<std::pair<std::string, size_t>>{{"info", 3}, {"warn", 2}, {"error", 1}, {"off", 0}}) {
    const fs::path f = dir / (level + ".log");
    {
      AccessLog log(f.string(), "json", level);
      for (int status : {200, 404, 503}) {
        r.status = status;
        log.write(r);
      }
    }
    const auto lines = lines_of(f);
    EXPECT_EQ(lines.size(), want) << level;
    for (const std::string& l : lines) {
      EXPECT_EQ(l.find("sk-secret"), std::string::npos) << l;
      EXPECT_NO_THROW(json::parse(l)) << l;
    }
  }
  fs::remove_all(dir);
}

TEST(AccessLog, BadSettingsAreClearErrors) {
  // A path under a regular file cannot be created (a missing directory would be).
  const fs::path file = fs::temp_directory_path() / ("folio_access_log_file_" + std::to_string(getpid()));
  std::ofstream(file) << "x";
  const std::string bad = (file / "access.log").string();
  try {
    AccessLog log(bad, "json", "info");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Io);
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  fs::remove(file);
  EXPECT_THROW(AccessLog("off", "xml", "info"), Error);
  EXPECT_THROW(AccessLog("off", "json", "debug"), Error);
}

}  // namespace
}  // namespace folio
