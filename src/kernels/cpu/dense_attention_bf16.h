// Internal to the CPU kernels: dense_attention's bf16 path (dense_attention.h).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/dense_attention.h"

namespace folio::kernels::detail {

// dense_attention with both products in bf16 (bf16_gemm.h). Scores are computed transposed, keys
// down and a block of queries across, so the softmax runs down the columns with one query per
// vector lane (no horizontal reductions) and the probabilities of two keys pair into the bf16
// words the PV product reads in one pass. The probabilities are rounded unnormalised and each
// output divided by its query's sum. SAM's relative-position terms are bf16 products too (the
// queries against the tables, both rounded). Precondition: bf16_gemm_supported(); the shapes
// checked by dense_attention.
void dense_attention_bf16(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                          const RelPos2D* rel, float* out, ThreadPool& pool);
// The same on a qkv map already rounded to bf16 (the same results: the f32 map is rounded to bf16
// as it is packed).
void dense_attention_bf16(const uint16_t* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                          const RelPos2D* rel, float* out, ThreadPool& pool);

}  // namespace folio::kernels::detail
