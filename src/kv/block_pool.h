// KVBlockPool: owns every byte of KV storage and accounts for it.
//
// Storage is handed out as blocks of `tokens` token rows of K and V for one layer, each in the
// storage types the caller names (kv_layout.h gives the byte layout). Blocks are allocated lazily
// from huge-page chunks (block_arena.h) and recycled through free lists by byte size, so resident
// memory follows use. Each block is tagged with its owner
// sequence and layer; the pool keeps bytes in use per sequence and per layer, the peak, and refuses
// (Error::Kind::OutOfMemory) an allocation that would exceed the byte capacity. Benchmarks and
// metrics read these counters; nothing else estimates KV memory.
//
// Thread-compatible: callers serialise allocate/release (the scheduler does); reads of block
// memory from many threads are fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kv/block_arena.h"
#include "kv/kv_layout.h"

namespace folio {

using SeqId = int64_t;

struct KVBlock {
  uint8_t* k = nullptr;  // head-major: n_kv_heads x tokens x row bytes of k_type
  uint8_t* v = nullptr;
  uint16_t* k_params = nullptr;  // quantised keys: per-channel group parameters (kv_layout.h)
  size_t k_param_stride = 0;     // keys quantised per token: parameters per row (0: per channel)
  uint16_t* v_params = nullptr;  // quantised values: per-token group parameters
  int64_t tokens = 0;            // capacity in token rows
  KVDType k_type = KVDType::F32, v_type = KVDType::F32;
  size_t k_head_stride = 0, v_head_stride = 0;
  size_t bytes = 0;
};

// The block of `tokens` rows storing keys as k and values as v whose bytes start at `base` (64-byte
// aligned, layout.block_bytes(k, v, tokens) long): where its parts are, by the layout's geometry.
KVBlock place_block(const KVLayout& layout, uint8_t* base, int64_t tokens, KVDType k, KVDType v,
                    KeyScales ks = KeyScales::PerChannel);

class KVBlockPool {
 public:
  // capacity_bytes == 0 means unlimited.
  KVBlockPool(KVLayout layout, size_t capacity_bytes);
  ~KVBlockPool();
  KVBlockPool(const KVBlockPool&) = delete;
  KVBlockPool& operator=(const KVBlockPool&) = delete;

  const KVLayout& layout() const { return layout_; }

  // A block of `tokens` rows for (seq, layer) storing keys as k (their scales kept as ks says) and
  // values as v. Throws Error(OutOfMemory) past capacity.
  int64_t allocate(SeqId seq, int64_t layer, int64_t tokens, KVDType k, KVDType v, KeyScales ks = KeyScales::PerChannel);
  // ... in the layout's reference types.
  int64_t allocate(SeqId seq, int64_t layer, int64_t tokens) {
    return allocate(seq, layer, tokens, layout_.types.ref_k, layout_.types.ref_v);
  }
  void release(int64_t block_id);
  const KVBlock& block(int64_t block_id) const { return blocks_[static_cast<size_t>(block_id)].mem; }

  size_t block_bytes(int64_t tokens, KVDType k, KVDType v, KeyScales ks = KeyScales::PerChannel) const {
    return layout_.block_bytes(k, v, tokens, ks);
  }
  // ... in the layout's reference types.
  size_t block_bytes(int64_t tokens) const { return block_bytes(tokens, layout_.types.ref_k, layout_.types.ref_v); }
  size_t capacity_bytes() const { return capacity_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t peak_bytes() const { return peak_; }
  size_t bytes_for(SeqId seq) const;
  size_t bytes_for(SeqId seq, int64_t layer) const;
  // Whether `bytes` more could be allocated now.
  bool can_allocate(size_t bytes) const { return capacity_ == 0 || in_use_ + bytes <= capacity_; }

 private:
  struct Entry {
    KVBlock mem;
    SeqId seq = -1;
    int64_t layer = -1;
    bool live = false;
    uint8_t* raw = nullptr;  // in arena_
  };
  KVLayout layout_;
  size_t capacity_;
  BlockArena arena_;  // block memory: huge-page chunks (block_arena.h)
  size_t in_use_ = 0;
  size_t peak_ = 0;
  std::vector<Entry> blocks_;
  std::map<size_t, std::vector<int64_t>> free_by_size_;   // bytes -> free block ids (memory kept)
  std::map<SeqId, std::vector<size_t>> per_seq_layer_;    // bytes per layer of each sequence
};

}  // namespace folio
