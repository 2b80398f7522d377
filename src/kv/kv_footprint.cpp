#include "kv/kv_footprint.h"

#include <algorithm>

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

size_t KVFootprint::worst_case_bytes(const KVBlockPool& pool, const KVPolicy& policy, int64_t block_tokens,
                                     std::span<const int64_t> segments, int64_t generated, bool reference_offloaded) {
  if (segments.empty()) return 0;
  const KVFootprint f(pool, policy, block_tokens);
  if (reference_offloaded) {
    // A segment leaves the pool when the next starts, before the next takes any block; under a
    // window the last one leaves when generation starts, before the ring is allocated.
    size_t largest_open = 0;
    for (size_t i = 0; i + 1 < segments.size(); ++i) largest_open = std::max(largest_open, f.open_segment(segments[i]));
    const size_t last = policy.windowed() ? std::max(f.open_segment(segments.back()), generated > 0 ? f.window() : 0)
                                          : f.open_segment(segments.back() + generated);
    return static_cast<size_t>(pool.layout().n_layers) * std::max(largest_open, last);
  }
  // A segment is open (whole blocks) while it fills and shrinks when the next starts: the peak is
  // the largest of (segments closed so far + the one filling).
  size_t closed = 0, per_layer = 0;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    per_layer = std::max(per_layer, closed + f.open_segment(segments[i]));
    closed += f.closed_segment(segments[i]);
  }
  if (!policy.windowed()) {
    // The output extends the last segment, which stays open.
    per_layer = std::max(per_layer, closed + f.open_segment(segments.back() + generated));
  } else {
    // Prefill ends with the last segment open; generation closes it, then takes the window.
    per_layer = std::max(per_layer, closed + f.open_segment(segments.back()));
    if (generated > 0) per_layer = std::max(per_layer, closed + f.closed_segment(segments.back()) + f.window());
  }
  return static_cast<size_t>(pool.layout().n_layers) * per_layer;
}

}  // namespace folio
