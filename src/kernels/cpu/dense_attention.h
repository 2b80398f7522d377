// Bidirectional (unmasked) multi-head attention over short, fully materialised sequences: the
// attention of the vision encoders (SAM windows and global blocks, CLIP), where every token sees
// every token of its sequence and there is no KV cache.
//
// Optionally adds SAM's decomposed relative-position terms: for a query at grid cell (qy, qx) with
// unscaled head vector q, score(key (ky, kx)) = scale * q.k + q.Th[qy - ky + Sh - 1] +
// q.Tw[qx - kx + Sw - 1], computed per query row (the [T, T] bias is never materialised).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"

namespace folio::kernels {

struct RelPos2D {
  const float* table_h = nullptr;  // [2 * side_h - 1, head_dim]
  const float* table_w = nullptr;  // [2 * side_w - 1, head_dim]
  int64_t side_h = 0;              // the sequence is a side_h x side_w grid, row-major
  int64_t side_w = 0;
};

// n_seq independent sequences of T tokens each. qkv is [n_seq * T, 3 * n_heads * head_dim] with each
// row laid out [3][n_heads][head_dim] (q, k, v); out is [n_seq * T, n_heads * head_dim], heads
// concatenated head-major. scale is usually 1 / sqrt(head_dim). In f32, QK^T and PV run as
// single-threaded sgemm calls on blocks of query rows, spread over the pool. With `precision` Bf16
// on a CPU with AVX512-BF16 both products run in bf16 with f32 sums (bf16_gemm.h; Q, K, V and the
// unnormalised probabilities rounded to bf16, each output divided by its query's f32 sum), scores
// held transposed so the softmax is vertical (dense_attention_bf16.h). Either way results do not
// depend on the pool size.
// Throws InvalidInput if rel is given and side_h * side_w != T.
void dense_attention(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                     const RelPos2D* rel, float* out, ThreadPool& pool, GemmPrecision precision = GemmPrecision::F32);

// A ViT block's input projection and attention: qkv = x . w_qkv^T + b_qkv over the n_seq * T rows
// of x ([n_seq * T, in]), then dense_attention over it into out. The results equal linear and then
// dense_attention with `precision`; where linear would run on the bf16 GEMM the qkv map is stored
// already rounded to bf16 (the values the bf16 attention rounds it to as it packs it): half the
// bytes to write and read back (45 MB -> 23 MB for SAM's windows, more than the L3 holds).
// qkv_scratch holds at least n_seq * T * 3 * n_heads * head_dim floats; x may be out (it is read
// before out is written). Throws as linear and dense_attention do.
void qkv_attention(const TensorView& w_qkv, const float* b_qkv, const float* x, int64_t n_seq, int64_t T,
                   int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel, float* qkv_scratch, float* out,
                   ThreadPool& pool, GemmPrecision precision);
// The same on LayerNorm'd rows (nn_ops.h); out holds them first on the f32 paths. The bits of
// in.write and qkv_attention.
void qkv_attention(const TensorView& w_qkv, const float* b_qkv, const NormedRows& in, int64_t n_seq, int64_t T,
                   int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel, float* qkv_scratch, float* out,
                   ThreadPool& pool, GemmPrecision precision);

}  // namespace folio::kernels
