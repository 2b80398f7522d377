#include "server/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace folio {

int64_t RateLimiter::acquire(const std::string& key, Clock::time_point now) {
  if (rate_ <= 0) return 0;
  const double capacity = std::max(1.0, rate_);
  const double per_second = rate_ / 60.0;
  std::lock_guard lk(mu_);
  // Keep the map bounded when keys are client addresses: full buckets carry no state.
  if (buckets_.size() > 100000)
    std::erase_if(buckets_, [&](const auto& kv) {
      return kv.second.tokens + per_second * std::chrono::duration<double>(now - kv.second.last).count() >= capacity;
    });
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{capacity, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double elapsed = std::max(0.0, std::chrono::duration<double>(now - b.last).count());
    b.tokens = std::min(capacity, b.tokens + elapsed * per_second);
    b.last = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return 0;
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil((1.0 - b.tokens) / per_second)));
}

}  // namespace folio
