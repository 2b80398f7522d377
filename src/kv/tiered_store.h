// TieredStore: reference KV blocks spread over a hot tier, a cold tier and optionally colder ones,
// with LRU between them and counters per tier. See docs/kv-tiers.md.
//
// Tier 0 is hot (RAM), tier 1 cold (a mapped file), further tiers colder still (a remote store).
//   - put() places a block in the hottest tier it can, making room there by demoting that tier's
//     least-recently-used unpinned blocks one tier down (which may cascade further down).
//   - acquire() pins a block and returns a read pointer valid until the matching release(). A block
//     found in a colder tier is promoted to the hottest addressable tier that has free room now
//     (promotion never demotes anything, so a scan over more blocks than the hot budget does not
//     thrash); without such room it is read in place from its tier's mapping (a cold read). A block
//     in a tier that cannot be read in place (remote) is promoted, demoting LRU blocks to make room.
//   - Pinned blocks never move: they are never demoted, promoted or overwritten.
// Acquire and put count as uses for LRU. Every tier's footprint stays within its budget; when no
// tier can take a block, put throws Error(OutOfMemory) naming every tier's budget and use. After any
// error the store is consistent: each block is held by exactly one tier with its bytes intact and
// the counters agree with the tiers (demotions made while looking for room stay made).
//
// Thread-safe: every call takes one internal lock; the bytes behind an acquired pointer may be read
// from any thread without it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/kv_tier.h"

namespace folio {

// Counters of one tier, for /metrics and benchmarks (kv_bytes by tier).
struct TierStats {
  std::string name;             // "ram", "file", ...
  std::string location;         // "RAM" or the file's path
  size_t capacity_bytes = 0;    // budget, 0 = unlimited
  size_t bytes = 0;             // bytes of the blocks held
  size_t footprint_bytes = 0;   // bytes charged against the budget (file: its length)
  size_t blocks = 0;            // blocks held
  size_t pinned_blocks = 0;     // of those, acquired and not yet released
  uint64_t hits = 0;            // acquires served in place from this tier (below tier 0: cold reads)
  uint64_t promotions = 0;      // blocks moved from this tier to a hotter one
  uint64_t demotions = 0;       // blocks moved from this tier to a colder one
};

struct TieredStoreStats {
  std::vector<TierStats> tiers;  // [0] hot ... coldest
  uint64_t acquires = 0;
  uint64_t misses = 0;           // acquires not served by tier 0 (cold reads + promotions on acquire)
  size_t bytes() const;          // over all tiers
};

class TieredStore {
 public:
  // tiers[0] is hot and must be addressable; at least one tier. Error(InvalidInput) otherwise.
  explicit TieredStore(std::vector<std::unique_ptr<KVTier>> tiers);
  TieredStore(std::unique_ptr<KVTier> hot, std::unique_ptr<KVTier> cold);
  TieredStore(const TieredStore&) = delete;
  TieredStore& operator=(const TieredStore&) = delete;

  // Stores (or replaces) a block. A replacement of the same size is written where the block is;
  // otherwise the old block is dropped and the new one placed as above. Error(Internal) if the key
  // is pinned; Error(OutOfMemory) if no tier can take it (the key is then absent); a tier's own
  // error (a full disk) passes through with the key absent.
  void put(const BlockKey& key, std::span<const uint8_t> bytes);

  // Pins the block and returns a pointer to its bytes (size_of(key) of them), valid until the
  // matching release(); acquires nest. Error(Internal) if the key is not held; Error(OutOfMemory)
  // if the block is in a non-addressable tier and no addressable tier can make room.
  const uint8_t* acquire(const BlockKey& key);
  // Error(Internal) if the key is not held or not acquired.
  void release(const BlockKey& key);

  // Error(Internal) if the key is not held or is pinned.
  void erase(const BlockKey& key);
  // Drops every block of sequence `seq`; returns how many. Error(Internal) naming a pinned block,
  // before anything is dropped, if any is pinned.
  size_t erase_sequence(int64_t seq);

  bool contains(const BlockKey& key) const;
  size_t size_of(const BlockKey& key) const;
  // Index of the tier holding the block (0 = hot).
  size_t tier_of(const BlockKey& key) const;
  size_t tier_count() const { return tiers_.size(); }
  const KVTier& tier(size_t i) const { return *tiers_.at(i); }

  TieredStoreStats stats() const;

  // RAII pin: acquire on construction, release on destruction.
  class Pin {
   public:
    Pin(TieredStore& store, const BlockKey& key) : store_(&store), key_(key), data_(store.acquire(key)) {}
    ~Pin() { reset(); }
    Pin(Pin&& o) noexcept : store_(o.store_), key_(o.key_), data_(o.data_) { o.store_ = nullptr; }
    Pin& operator=(Pin&&) = delete;
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    const uint8_t* data() const { return data_; }
    void reset() {
      if (store_) store_->release(key_);
      store_ = nullptr;
    }

   private:
    TieredStore* store_;
    BlockKey key_;
    const uint8_t* data_;
  };

 private:
  struct Entry {
    size_t tier = 0;
    size_t size = 0;
    int64_t pins = 0;
    std::list<BlockKey>::iterator lru;  // in lru_[tier]
  };
  struct Counters {
    uint64_t hits = 0, promotions = 0, demotions = 0;
  };

  Entry& find(const BlockKey& key);
  const Entry& find(const BlockKey& key) const;
  void touch(Entry& e);
  // Demotes LRU unpinned blocks of tier t until it can take `bytes`; false if it cannot.
  bool make_room(size_t t, size_t bytes);
  // Moves an unpinned block between tiers (tier `to` must have room), keeping it at `to`'s MRU end.
  void move(const BlockKey& key, Entry& e, size_t to);
  void erase_locked(const BlockKey& key, Entry& e);
  std::string describe_tiers() const;

  std::vector<std::unique_ptr<KVTier>> tiers_;
  std::vector<std::list<BlockKey>> lru_;  // per tier, front = most recently used
  std::vector<Counters> counters_;
  std::unordered_map<BlockKey, Entry, BlockKeyHash> entries_;
  uint64_t acquires_ = 0;
  std::vector<uint8_t> staging_;  // copies out of non-addressable tiers
  mutable std::mutex mu_;
};

}  // namespace folio
