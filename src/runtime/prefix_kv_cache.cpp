#include "runtime/prefix_kv_cache.h"

#include <algorithm>

#include "core/content_hash.h"

namespace folio {

std::vector<std::string> prefix_keys(const std::vector<ReferencePart>& reference) {
  std::vector<std::string> out;
  std::string chain;
  for (const ReferencePart& part : reference) {
    Sha256 h;
    h.field(chain);
    if (part.is_embedding()) {
      if (part.key.empty()) break;
      h.field("rows").field(part.key);
    } else {
      h.field("ids").field(std::string_view(reinterpret_cast<const char*>(part.ids.data()), part.ids.size() * sizeof(int32_t)));
    }
    // Where sparse units start is part of the KV a segment is rebuilt with.
    h.field(std::string_view(reinterpret_cast<const char*>(part.unit_starts.data()), part.unit_starts.size() * sizeof(int64_t)));
    chain = h.hex();
    out.push_back(chain);
  }
  return out;
}

PrefixKVCache::Match PrefixKVCache::lookup(const std::vector<std::string>& keys) {
  Match best;
  auto best_it = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const std::vector<std::string>& k = (*it)->keys;
    size_t n = 0;
    while (n < k.size() && n < keys.size() && k[n] == keys[n]) ++n;
    if (n > best.parts) {
      best.parts = n;
      best.entry = *it;
      best_it = it;
    }
  }
  if (best_it != lru_.end()) lru_.splice(lru_.begin(), lru_, best_it);
  return best;
}

void PrefixKVCache::record(size_t parts, int64_t tokens, bool keyed) {
  if (parts > 0) {
    stats_.hits++;
    stats_.tokens_reused += static_cast<uint64_t>(tokens);
  } else if (keyed) {
    stats_.misses++;
  }
}

bool PrefixKVCache::contains(const std::vector<std::string>& keys, bool need_logits) const {
  return std::any_of(lru_.begin(), lru_.end(),
                     [&](const auto& e) { return e->keys == keys && (!need_logits || !e->logits.empty()); });
}

void PrefixKVCache::insert(Entry entry) {
  if (entry.keys.empty() || !entry.kv) return;
  entry.bytes = entry.kv->bytes() + entry.logits.size() * sizeof(float);
  if (entry.bytes > stats_.capacity) return;
  const size_t n = entry.keys.size();
  for (const auto& e : lru_)
    if (e->keys.size() >= n && std::equal(entry.keys.begin(), entry.keys.end(), e->keys.begin()) &&
        (entry.logits.empty() || (e->keys.size() == n && !e->logits.empty())))
      return;  // what it would offer is kept already
  // One entry per key chain (the newer one: it may add logits), and none that the new one covers:
  // a chain of its first parts without logits offers nothing the new one does not (the scheduler
  // keeps such a one when prefill ends and the whole reference when the sequence ends).
  for (auto it = lru_.begin(); it != lru_.end();) {
    const Entry& e = **it;
    const bool covered = e.keys.size() < n && e.logits.empty() && std::equal(e.keys.begin(), e.keys.end(), entry.keys.begin());
    if (e.keys != entry.keys && !covered) {
      ++it;
      continue;
    }
    stats_.bytes -= e.bytes;
    it = lru_.erase(it);
  }
  stats_.bytes += entry.bytes;
  lru_.push_front(std::make_shared<const Entry>(std::move(entry)));
  while (stats_.bytes > stats_.capacity) {
    stats_.bytes -= lru_.back()->bytes;
    lru_.pop_back();
    stats_.evictions++;
  }
  stats_.entries = lru_.size();
}

}  // namespace folio
