// KVTier: one place KV blocks can live (RAM, a memory-mapped file of ours, later a remote store).
//
// A tier is a byte-budgeted map from BlockKey to an opaque block of bytes. It knows nothing about
// layouts, LRU or pinning: TieredStore (kv/tiered_store.h) decides what lives where and moves blocks
// between tiers with put / get / erase. A tier whose memory is addressable hands out direct read
// pointers (`view`), so a block can be read in place without a copy; a remote tier returns nullptr
// and is only ever read by copying (`get`).
//
// Budget: footprint_bytes() (what the tier really holds: heap bytes, file length) never exceeds
// capacity_bytes(); a put that would exceed it throws Error(OutOfMemory) and changes nothing.
// Thread-compatible: callers serialise mutations (TieredStore does); reads of viewed memory from
// many threads are fine while no one erases or overwrites that block.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace folio {

// Which block: a sequence's block number `block` in `layer` (the same numbering SequenceKV uses).
struct BlockKey {
  int64_t seq = 0;
  int64_t layer = 0;
  int64_t block = 0;
  friend auto operator<=>(const BlockKey&, const BlockKey&) = default;
};

// "seq 3 layer 0 block 5", for error messages.
std::string to_string(const BlockKey& key);

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const noexcept;
};

class KVTier {
 public:
  virtual ~KVTier() = default;

  // Short name for counters and messages: "ram", "file", "remote".
  virtual std::string name() const = 0;
  // Where the bytes are, for messages: "RAM" or the file's path.
  virtual std::string location() const = 0;
  // Budget in bytes; 0 means unlimited.
  virtual size_t capacity_bytes() const = 0;
  // Bytes of the blocks held (sum of their sizes).
  virtual size_t bytes_in_use() const = 0;
  // Bytes charged against the budget: bytes_in_use plus slot rounding and free slots kept for reuse.
  virtual size_t footprint_bytes() const = 0;
  virtual size_t block_count() const = 0;
  // Whether view() returns pointers (RAM, mapped file) or nullptr (remote).
  virtual bool addressable() const = 0;

  // Whether put() of a key not held now, `bytes` long, would fit the budget.
  virtual bool can_put(size_t bytes) const = 0;
  virtual bool contains(const BlockKey& key) const = 0;
  // Size of a held block; Error(Internal) naming the key if it is not held.
  virtual size_t size_of(const BlockKey& key) const = 0;

  // Stores a copy of `bytes` (non-empty) under `key`, replacing what the key held. Throws
  // Error(OutOfMemory) past the budget, leaving the tier (and the key's old bytes) unchanged.
  virtual void put(const BlockKey& key, std::span<const uint8_t> bytes) = 0;
  // Copies the block into `out`, which must be exactly its size (Error(Internal) otherwise).
  virtual void get(const BlockKey& key, std::span<uint8_t> out) const = 0;
  // Direct read pointer to the block, valid until it is erased or overwritten; nullptr where the
  // tier is not addressable (remote). Error(Internal) if the key is not held.
  virtual const uint8_t* view(const BlockKey& key) const = 0;
  // Drops the block; Error(Internal) if the key is not held.
  virtual void erase(const BlockKey& key) = 0;

 protected:
  // The shared "not held" / "wrong size" errors, so every tier words them alike.
  [[noreturn]] void throw_missing(const BlockKey& key) const;
  void check_get_size(const BlockKey& key, size_t held, size_t requested) const;
};

}  // namespace folio
