// PrefixKVCache: reference KV kept after a sequence ends, so that a later sequence whose reference
// starts with the same parts skips prefilling them (reference reuse across requests).
//
// A reference is a list of parts (ReferencePart); each part has a content key, and the key of a
// prefix is a SHA-256 chain over the keys of its parts (prefix_keys), so equal chain keys mean equal
// parts in the same order, hence equal KV (the scheduler owns one model, policy and storage layout).
// An entry holds a ReferenceSnapshot of its first `parts` parts, one KV segment per part, and, when
// it covers the whole reference of the sequence it came from, that reference's last logits (what
// the first output token is sampled from), so an identical request skips prefill entirely.
//
// lookup() finds the entry sharing the longest prefix with a request; insert() keeps an entry within
// the byte budget (least recently used out; an entry larger than the budget is not kept). Bytes are
// the snapshots' block bytes plus the logits. Not thread-safe: the scheduler thread owns it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/reference_snapshot.h"
#include "runtime/sequence_request.h"

namespace folio {

// Chain keys of a reference: out[i] identifies parts [0, i]. A token part is keyed by its ids, an
// embedding part by its ReferencePart::key; the chain stops before the first embedding part without
// a key (what its rows are is unknown, so nothing from there on is reused).
std::vector<std::string> prefix_keys(const std::vector<ReferencePart>& reference);

struct PrefixKVStats {
  uint64_t hits = 0;        // sequences that reused at least one part
  uint64_t misses = 0;      // sequences with a keyed first part that reused nothing
  uint64_t evictions = 0;
  uint64_t tokens_reused = 0;  // reference tokens not prefilled thanks to the cache
  uint64_t offers_kept = 0, offers_refused = 0;  // entries offered from elsewhere (Scheduler::offer_prefix)
  size_t bytes = 0, entries = 0, capacity = 0;
};

class PrefixKVCache {
 public:
  struct Entry {
    std::vector<std::string> keys;  // chain keys of its parts
    std::shared_ptr<const ReferenceSnapshot> kv;  // one segment per part
    std::vector<float> logits;      // after its last part, when it was a whole reference; else empty
    size_t bytes = 0;
  };
  struct Match {
    std::shared_ptr<const Entry> entry;
    size_t parts = 0;  // leading parts of the request it covers
  };

  explicit PrefixKVCache(size_t capacity_bytes) { stats_.capacity = capacity_bytes; }
  bool enabled() const { return stats_.capacity > 0; }

  // The entry sharing the most leading parts with `keys` (a request's chain keys), or parts == 0.
  // Marks it most recently used.
  Match lookup(const std::vector<std::string>& keys);
  // Counts the outcome of a request's lookup (hit: `parts` > 0 reused, `tokens` of them).
  void record(size_t parts, int64_t tokens, bool keyed);
  // Keeps an entry (replacing one with the same keys, and dropping shorter chains of its first
  // parts that have no logits) if it fits the budget, evicting least recently used ones.
  void insert(Entry entry);
  // Whether an entry with exactly these keys and (if `need_logits`) logits is kept.
  bool contains(const std::vector<std::string>& keys, bool need_logits) const;
  const PrefixKVStats& stats() const { return stats_; }
  void count_offer(bool kept) { ++(kept ? stats_.offers_kept : stats_.offers_refused); }

 private:
  std::list<std::shared_ptr<const Entry>> lru_;  // front = most recent
  PrefixKVStats stats_;
};

}  // namespace folio
