#include "kv/block_pool.h"

#include <string>

#include "core/error.h"

namespace folio {

KVBlockPool::KVBlockPool(KVLayout layout, size_t capacity_bytes) : layout_(layout), capacity_(capacity_bytes) {
  if (layout.n_layers <= 0 || layout.n_kv_heads <= 0 || layout.head_dim <= 0)
    throw_invalid("KV layout needs positive layers, heads and head_dim");
}

KVBlockPool::~KVBlockPool() = default;

KVBlock place_block(const KVLayout& layout, uint8_t* base, int64_t tokens, KVDType k, KVDType v, KeyScales ks) {
  const KVBlockGeometry g = layout.geometry(k, v, tokens, ks);
  KVBlock b;
  b.k = base;
  b.k_params = reinterpret_cast<uint16_t*>(base + g.k_params);
  b.k_param_stride = g.k_param_stride;
  b.v = base + g.v;
  b.v_params = reinterpret_cast<uint16_t*>(base + g.v_params);
  b.tokens = tokens;
  b.k_type = k;
  b.v_type = v;
  b.k_head_stride = g.k_head_stride;
  b.v_head_stride = g.v_head_stride;
  b.bytes = g.bytes;
  return b;
}

int64_t KVBlockPool::allocate(SeqId seq, int64_t layer, int64_t tokens, KVDType k, KVDType v, KeyScales ks) {
  const size_t bytes = block_bytes(tokens, k, v, ks);
  if (!can_allocate(bytes))
    throw Error(Error::Kind::OutOfMemory, "KV pool full: " + std::to_string(in_use_) + " of " +
                                              std::to_string(capacity_) + " bytes in use, " +
                                              std::to_string(bytes) + " more requested");
  int64_t id;
  auto& free_list = free_by_size_[bytes];
  if (!free_list.empty()) {
    id = free_list.back();
    free_list.pop_back();
  } else {
    Entry e;
    e.raw = arena_.allocate(bytes);
    if (!e.raw) throw Error(Error::Kind::OutOfMemory, "KV pool: system allocation of " + std::to_string(bytes) + " bytes failed");
    blocks_.push_back(e);
    id = static_cast<int64_t>(blocks_.size()) - 1;
  }
  Entry& e = blocks_[static_cast<size_t>(id)];
  e.mem = place_block(layout_, e.raw, tokens, k, v, ks);
  e.seq = seq;
  e.layer = layer;
  e.live = true;
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
  auto& per_layer = per_seq_layer_[seq];
  if (per_layer.size() < static_cast<size_t>(layout_.n_layers)) per_layer.resize(static_cast<size_t>(layout_.n_layers), 0);
  per_layer[static_cast<size_t>(layer)] += bytes;
  return id;
}

void KVBlockPool::release(int64_t id) {
  Entry& e = blocks_.at(static_cast<size_t>(id));
  if (!e.live) throw Error(Error::Kind::Internal, "KV pool: double release of block " + std::to_string(id));
  const size_t bytes = e.mem.bytes;
  in_use_ -= bytes;
  auto it = per_seq_layer_.find(e.seq);
  it->second[static_cast<size_t>(e.layer)] -= bytes;
  bool empty = true;
  for (size_t b : it->second) empty = empty && b == 0;
  if (empty) per_seq_layer_.erase(it);
  e.live = false;
  free_by_size_[bytes].push_back(id);
}

size_t KVBlockPool::bytes_for(SeqId seq) const {
  auto it = per_seq_layer_.find(seq);
  if (it == per_seq_layer_.end()) return 0;
  size_t s = 0;
  for (size_t b : it->second) s += b;
  return s;
}

size_t KVBlockPool::bytes_for(SeqId seq, int64_t layer) const {
  auto it = per_seq_layer_.find(seq);
  if (it == per_seq_layer_.end() || static_cast<size_t>(layer) >= it->second.size()) return 0;
  return it->second[static_cast<size_t>(layer)];
}

}  // namespace folio
