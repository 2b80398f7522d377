#include "kernels/cpu/dense_attention_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"

// Everything below runs only where bf16_gemm_supported() (the header's precondition).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
// GCC bug 105593: its AVX-512 intrinsics' pass-through operands trip these (as in kernels_avx512.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/bf16_pairs_avx512.h"
#include "kernels/cpu/vec_avx512.h"

namespace folio::kernels::detail {

namespace {

// Queries per task, at most: a [T, 64] f32 score block (1 MiB at T = 4096), four vectors a row.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kLanes = 16;
constexpr int64_t NR = kBf16PanelCols;
static_assert(NR == 2 * kLanes, "a weight panel holds two vectors of queries");

// A sequence's queries in blocks as even as possible (a window of 196 in four of 49, not 64 + 4).
struct QueryBlocks {
  int64_t count, size;
  explicit QueryBlocks(int64_t T) : count((T + kQueryBlock - 1) / kQueryBlock), size((T + count - 1) / count) {}
};

// One head of one sequence, packed once for all its query blocks: K as activation rows (keys
// down the scores) and V^T as activation rows (channels down the output).
struct HeadOperands {
  Bf16Activations keys, values_t;
};

// What a task keeps between its steps, per thread.
struct Scratch {
  std::vector<float> scores;        // [T, kQueryBlock]: column q is query q
  std::vector<uint32_t> queries;    // the block's queries as bf16 weight panels
  std::vector<uint32_t> probs;      // exp(scores - max) as bf16 weight panels, keys paired
  std::vector<float> rel_h, rel_w;  // [nq, 2 side - 1] projections on the tables
  std::vector<float> bias_h, bias_w;  // [side, kQueryBlock]: the terms of key row ky / column kx
  std::vector<float> out_t;         // [head_dim, kQueryBlock]
};

// bias[k * kQueryBlock + q] = proj[q * (2 side - 1) + pos(q) - k + side - 1] for key coordinate k
// < side, query q < nq at coordinate pos(q); zero for the block's unused lanes.
template <typename Pos>
void bias_by_key(const float* proj, int64_t nq, int64_t side, Pos pos, std::vector<float>& bias) {
  bias.assign(static_cast<size_t>(side * kQueryBlock), 0.0f);
  const int64_t L = 2 * side - 1;
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t k = 0; k < side; ++k) bias[static_cast<size_t>(k * kQueryBlock + q)] = proj[q * L + pos(q) - k + side - 1];
}

// scores = scores * scale (+ bias_h[ky] + bias_w[kx] for key (ky, kx)), in place; returns the
// per-query maximum in m (kQueryBlock floats).
void scale_and_max(float* S, int64_t T, int64_t nv, float scale, const Scratch* rel, int64_t side_w, float* m) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t v = 0; v < nv; ++v) _mm512_storeu_ps(m + v * kLanes, _mm512_set1_ps(-3.0e38f));
  for (int64_t k = 0; k < T; ++k) {
    float* row = S + k * kQueryBlock;
    const float* bh = rel ? rel->bias_h.data() + (k / side_w) * kQueryBlock : nullptr;
    const float* bw = rel ? rel->bias_w.data() + (k % side_w) * kQueryBlock : nullptr;
    for (int64_t v = 0; v < nv; ++v) {
      const __m512 x = _mm512_loadu_ps(row + v * kLanes);
      const __m512 y = rel ? _mm512_fmadd_ps(x, s, _mm512_add_ps(_mm512_loadu_ps(bh + v * kLanes), _mm512_loadu_ps(bw + v * kLanes)))
                           : _mm512_mul_ps(x, s);
      _mm512_storeu_ps(row + v * kLanes, y);
      _mm512_storeu_ps(m + v * kLanes, _mm512_max_ps(_mm512_loadu_ps(m + v * kLanes), y));
    }
  }
}

// exp(scores - m) of keys 2p and 2p + 1 (a zero past T) as pair words in the weight panels of
// `probs` (query q is weight row q), summed per query into sum.
void exp_to_pairs(const float* S, int64_t T, int64_t nv, const float* m, uint32_t* probs, float* sum) {
  const int64_t pairs = (T + 1) / 2;
  for (int64_t v = 0; v < nv; ++v) _mm512_storeu_ps(sum + v * kLanes, _mm512_setzero_ps());
  for (int64_t p = 0; p < pairs; ++p) {
    const float* a = S + 2 * p * kQueryBlock;
    const bool second = 2 * p + 1 < T;
    for (int64_t v = 0; v < nv; ++v) {
      const __m512 mv = _mm512_loadu_ps(m + v * kLanes);
      const __m512 ea = VAvx512::exp(_mm512_sub_ps(_mm512_loadu_ps(a + v * kLanes), mv));
      const __m512 eb = second ? VAvx512::exp(_mm512_sub_ps(_mm512_loadu_ps(a + kQueryBlock + v * kLanes), mv))
                               : _mm512_setzero_ps();
      _mm512_storeu_ps(sum + v * kLanes, _mm512_add_ps(_mm512_loadu_ps(sum + v * kLanes), _mm512_add_ps(ea, eb)));
      uint32_t* dst = probs + (v / 2) * NR * pairs + p * NR + (v % 2) * kLanes;
      _mm512_storeu_si512(dst, bf16_pair_words(ea, eb));
    }
  }
}

void attend_block(const float* qkv, int64_t T, int64_t D, int64_t d, int64_t s, int64_t h, int64_t q0, int64_t nq,
                  float scale, const RelPos2D* rel, const HeadOperands& head, float* out, Scratch& w) {
  const int64_t ld = 3 * D, nv = (nq + kLanes - 1) / kLanes, pairs = (T + 1) / 2;
  const float* Q = qkv + (s * T + q0) * ld + h * d;
  w.scores.resize(static_cast<size_t>(T * kQueryBlock));
  pack_bf16_weights(Q, nq, d, ld, 1, w.queries);
  bf16_gemm(head.keys, w.queries.data(), nq, w.scores.data(), kQueryBlock);
  if (rel) {
    const int64_t sh = rel->side_h, sw = rel->side_w;
    w.rel_h.resize(static_cast<size_t>(nq * (2 * sh - 1)));
    w.rel_w.resize(static_cast<size_t>(nq * (2 * sw - 1)));
    project_on_table(Q, ld, nq, d, rel->table_h, sh, w.rel_h.data());
    project_on_table(Q, ld, nq, d, rel->table_w, sw, w.rel_w.data());
    bias_by_key(w.rel_h.data(), nq, sh, [&](int64_t q) { return (q0 + q) / sw; }, w.bias_h);
    bias_by_key(w.rel_w.data(), nq, sw, [&](int64_t q) { return (q0 + q) % sw; }, w.bias_w);
  }
  alignas(64) float m[kQueryBlock], sum[kQueryBlock];
  scale_and_max(w.scores.data(), T, nv, scale, rel ? &w : nullptr, rel ? rel->side_w : 1, m);
  w.probs.resize(static_cast<size_t>((nv + 1) / 2 * NR * pairs));
  exp_to_pairs(w.scores.data(), T, nv, m, w.probs.data(), sum);
  w.out_t.resize(static_cast<size_t>(d * kQueryBlock));
  bf16_gemm(head.values_t, w.probs.data(), nq, w.out_t.data(), kQueryBlock);
  for (int64_t q = 0; q < nq; ++q) {
    const float inv = 1.0f / sum[q];
    float* o = out + (s * T + q0 + q) * D + h * d;
    for (int64_t c = 0; c < d; ++c) o[c] = w.out_t[static_cast<size_t>(c * kQueryBlock + q)] * inv;
  }
}

}  // namespace

void dense_attention_bf16(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                          const RelPos2D* rel, float* out, ThreadPool& pool) {
  const int64_t D = n_heads * head_dim, ld = 3 * D;
  std::vector<HeadOperands> heads(static_cast<size_t>(n_seq * n_heads));
  pool.parallel_for(n_seq * n_heads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* base = qkv + (i / n_heads) * T * ld + (i % n_heads) * head_dim;
      heads[static_cast<size_t>(i)].keys.assign(base + D, T, head_dim, ld);
      heads[static_cast<size_t>(i)].values_t.assign_transposed(base + 2 * D, head_dim, T, ld);
    }
  });
  const QueryBlocks blocks(T);
  pool.parallel_for(n_seq * n_heads * blocks.count, [&](int64_t begin, int64_t end) {
    thread_local Scratch scratch;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t i = task / blocks.count, q0 = (task % blocks.count) * blocks.size;
      attend_block(qkv, T, D, head_dim, i / n_heads, i % n_heads, q0, std::min(blocks.size, T - q0), scale, rel,
                   heads[static_cast<size_t>(i)], out, scratch);
    }
  });
}

}  // namespace folio::kernels::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
