#include "kv/kv_footprint.h"

#include "kernels/cpu/attention.h"

namespace folio {

using kernels::kKVKeyGroup;
using kernels::kv_quantized;

// Keys of a group still being filled cannot take their final form (their scales are per channel
// over the whole group): they are kept as q8 per token meanwhile, half of f16's bytes (the staging
// block set folio-mini-ocr 2's q4 peak, 31% of bf16's in f16). Requantising them per channel adds
// at most half an int8 step of the token's range to a q4 / q8 step of the channel's. Values are
// stored as they will stay.
KVDType KVFootprint::stage_key_type(KVDType t) { return kv_quantized(t) ? KVDType::Q8 : t; }

KVFootprint::KVFootprint(const KVBlockPool& pool, const KVPolicy& policy, int64_t block_tokens)
    : pool_(pool),
      policy_(policy),
      ref_quantized_(kv_quantized(pool.layout().types.ref_k) || kv_quantized(pool.layout().types.ref_v)),
      win_quantized_(policy.windowed() && (kv_quantized(pool.layout().types.win_k) || kv_quantized(pool.layout().types.win_v))),
      block_tokens_(ref_quantized_ ? kKVKeyGroup : block_tokens) {}

size_t KVFootprint::reference_block() const { return pool_.block_bytes(block_tokens_); }

size_t KVFootprint::reference_stage() const {
  const KVTypes& t = pool_.layout().types;
  return ref_quantized_ ? pool_.block_bytes(kKVKeyGroup, stage_key_type(t.ref_k), t.ref_v, kStageKeyScales) : 0;
}

size_t KVFootprint::window() const {
  const KVTypes& t = pool_.layout().types;
  return pool_.block_bytes(policy_.window, t.win_k, t.win_v, kWindowKeyScales);
}

size_t KVFootprint::open_segment(int64_t rows) const {
  return static_cast<size_t>((rows + block_tokens_ - 1) / block_tokens_) * reference_block() + reference_stage();
}

size_t KVFootprint::closed_segment(int64_t rows) const {
  // Whole blocks, and the partial last one re-allocated to its rows (float or quantised alike).
  const int64_t tail = rows % block_tokens_;
  return static_cast<size_t>(rows / block_tokens_) * reference_block() + (tail ? pool_.block_bytes(tail) : 0);
}

}  // namespace folio
