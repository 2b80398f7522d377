// ReferenceOffload: the reference blocks one sequence keeps in a TieredStore instead of its pool,
// and the pins that reads hold on them (SequenceKV's tiered reference, docs/kv-tiers.md).
//
// move_out copies segment i's blocks into the store byte for byte and frees them in the pool, all
// or nothing, and remembers where they went; block() gives a held segment's block, pinned for
// reading (once per block, however many heads read it) until release_pins(). block and
// release_pins may be called from many threads at once (the heads of a layer); move_out and erase
// only from the sequence's owner, with no read in flight. The store must outlive this object;
// erase() every held segment before destroying it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/tiered_store.h"

namespace folio {

class ReferenceOffload {
  // A block that lives in the store: its key and where its parts sit relative to its first byte.
  struct ColdBlock {
    BlockKey key;
    KVBlock meta;  // pointers null; placed at the store's bytes by block(..., true)
  };
  using ColdLayers = std::vector<std::vector<ColdBlock>>;  // [layer] -> blocks in row order

 public:
  ReferenceOffload(KVBlockPool& pool, SeqId id) : pool_(pool), id_(id) {}

  void attach(TieredStore* store) { store_ = store; }
  bool attached() const { return store_ != nullptr; }
  // Moves segment `segment`'s pool blocks `blocks` ([layer] -> ids) into the store and releases them
  // in the pool (blocks is left empty per layer). On a store error nothing moved and the error
  // propagates.
  void move_out(size_t segment, std::vector<std::vector<int64_t>>& blocks);
  // Whether segment `segment`'s blocks are in the store.
  bool holds(size_t segment) const { return segment < cold_.size() && !cold_[segment].empty(); }
  // Removes a held segment's blocks from the store (nothing when it holds none).
  void erase(size_t segment);
  // Block i of a held segment in `layer`: pinned at the store's bytes until release_pins() when
  // `pin`, else with null pointers (for its sizes).
  KVBlock block(size_t segment, size_t layer, size_t i, bool pin) const;
  size_t block_count(size_t segment, size_t layer) const { return cold_[segment][layer].size(); }
  void release_pins() const;
  // Bytes of this sequence's blocks in the store.
  size_t bytes() const { return bytes_; }

 private:
  KVBlockPool& pool_;
  SeqId id_;
  TieredStore* store_ = nullptr;
  int64_t next_block_ = 0;  // next BlockKey::block number in the store
  size_t bytes_ = 0;
  std::vector<ColdLayers> cold_;  // [segment] -> its blocks in the store; empty: none
  mutable std::mutex pin_mu_;
  // Blocks pinned since the last release_pins, by key (one pin per block, whichever heads read it).
  mutable std::unordered_map<BlockKey, const uint8_t*, BlockKeyHash> pinned_;
};

}  // namespace folio
