// ServerMetrics: the counters and histograms behind GET /metrics, rendered as Prometheus text.
//
// HTTP-level facts (requests by path and status, rejections by reason, tokens and latencies of
// finished requests) are recorded here by the handlers; gauges of the running engine (sequences,
// KV bytes from the pool's counters) come from a Scheduler snapshot at render time. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/scheduler.h"
#include "server/reference_cache.h"
#include "server/remote_reference_tier.h"

namespace folio {

// The shortest decimal text that reads back as v: "0.005" (not "0.0050000000000000001"), "5".
std::string shortest_number(double v);

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  // Appends the _bucket / _sum / _count lines of `name`.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The transport's connections at render time (http_server.h).
struct ConnectionStats {
  size_t open = 0;
  uint64_t refused = 0;  // over server.max_connections / max_connections_per_client
};

class ServerMetrics {
 public:
  ServerMetrics();

  void count_request(const std::string& path, int status);
  void count_rejection(const std::string& reason);
  void count_cancelled_by_client();
  // A finished generation: its token counts and latencies.
  void record_generation(const SequenceResult& r);

  // Prometheus text exposition (version 0.0.4). `stats` is null before the model is loaded; `cache`
  // and `connections` may be null (not shown).
  // `remote` (the shared reference tier) may be null too.
  std::string render(const SchedulerStats* stats, bool ready, const ReferenceCacheStats* cache = nullptr,
                     const ConnectionStats* connections = nullptr, const RemoteTierStats* remote = nullptr) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> rejections_;
  uint64_t cancelled_by_client_ = 0;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::map<std::string, uint64_t> finished_;  // by stop reason
  Histogram ttft_, tpot_, queue_;
};

}  // namespace folio
