#include "server/reference_cache.h"

namespace folio {

size_t reference_bytes(const std::vector<ReferencePart>& reference, int64_t hidden) {
  size_t b = 0;
  for (const ReferencePart& p : reference) {
    b += p.ids.size() * sizeof(int32_t);
    if (p.is_embedding()) b += p.ids.size() * static_cast<size_t>(hidden) * sizeof(float);
  }
  return b;
}

std::shared_ptr<const CachedPass> ReferenceCache::find(const std::string& key) {
  std::lock_guard lk(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ReferenceCache::insert(const std::string& key, std::shared_ptr<const CachedPass> value) {
  std::lock_guard lk(mu_);
  ++misses_;
  if (!value || value->bytes > capacity_) return;
  if (auto it = index_.find(key); it != index_.end()) {
    // Two requests prepared the same pass at once: keep the first, which others may already share.
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  while (!lru_.empty() && bytes_ + value->bytes > capacity_) {
    bytes_ -= lru_.back().second->bytes;
    index_.erase(lru_.back().first);
    lru_.pop_back();
    ++evictions_;
  }
  bytes_ += value->bytes;
  lru_.emplace_front(key, std::move(value));
  index_[key] = lru_.begin();
}

ReferenceCacheStats ReferenceCache::stats() const {
  std::lock_guard lk(mu_);
  return {hits_, misses_, evictions_, bytes_, lru_.size(), capacity_};
}

}  // namespace folio
