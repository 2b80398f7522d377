// RateLimiter: a token bucket per client key (API key, or client address without keys).
//
// A bucket holds up to `per_minute` tokens (at least 1) and refills at per_minute / 60 tokens per
// second; each request takes one. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace folio {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimiter(double per_minute) : rate_(per_minute) {}  // 0 = unlimited

  bool enabled() const { return rate_ > 0; }
  // Takes a token for `key`: 0 if the request may go on, else whole seconds (>= 1) until a token
  // will be there (the Retry-After value).
  int64_t acquire(const std::string& key, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double tokens;
    Clock::time_point last;
  };
  double rate_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace folio
