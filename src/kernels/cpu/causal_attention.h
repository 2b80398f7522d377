// Causal attention of a run of query positions over the KV cache, as matrix products: the prefill
// of a long reference.
//
// attend() (attention.h) serves one query at a time and reads every cached row for it; at a
// 16K-token reference that is 16K passes over a growing cache, bound by memory latency. Here the
// queries of a run go in blocks of kCausalQueryBlock per head, and the cache in tiles of
// kCausalKeyTile rows converted to f32 once per head (any KV dtype: f32, f16, bf16, q8, q4); each
// block meets each tile in two sgemm calls (scores, then values) with the softmax kept online
// (running maximum and sum per query, rescaling the partial output: flash attention's scheme).
#pragma once

#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "kernels/cpu/attention.h"

namespace folio::kernels {

inline constexpr int64_t kCausalQueryBlock = 128;
inline constexpr int64_t kCausalKeyTile = 256;

// Queries at positions [first, first + n) of one sequence: q and out are [n, n_heads * head_dim].
// `spans` hold the sequence's rows in position order, row r at position r, at least first + n of
// them (the run's own keys and values already stored); the query at position p sees rows 0..p.
// Work is split over the pool by (head, query block); each output depends only on its own block
// and the fixed tile boundaries, so results do not change with the pool's size.
// Throws InvalidInput if the spans hold fewer than first + n rows.
void attend_causal(const float* q, int64_t n, int64_t first, std::span<const KVSpan> spans, const AttentionShape& shape,
                   float* out, ThreadPool& pool);

}  // namespace folio::kernels
