#include "kernels/cpu/dense_attention_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bf16_gemm.h"

// Everything below runs only where bf16_gemm_supported() (the header's precondition).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
// GCC bug 105593: its AVX-512 intrinsics' pass-through operands trip these (as in kernels_avx512.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/bf16_amx.h"
#include "kernels/cpu/bf16_micro_kernel_avx512.h"
#include "kernels/cpu/bf16_pairs_avx512.h"
#include "kernels/cpu/transpose_avx512.h"

namespace folio::kernels::detail {

namespace {

// Queries per task, at most: a [T, 64] f32 score block (1 MiB at T = 4096), four vectors a row.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kLanes = 16;
constexpr int64_t MR = kBf16PanelRows, NR = kBf16PanelCols;
static_assert(NR == 2 * kLanes, "a weight panel holds two vectors of queries");

// One head of one sequence, packed once for all its query blocks: K as activation rows (keys
// down the scores) and V^T as activation rows (channels down the output).
struct HeadOperands {
  Bf16Activations keys, values_t;
};

// SAM's relative-position tables (shared by every head) as activation rows, so a block's
// projections on them come out table row down, query across, as the biases are read.
struct RelTables {
  const RelPos2D* rel = nullptr;
  Bf16Activations h, w;
};

// What a task keeps between its steps, per thread.
struct Scratch {
  std::vector<float> scores;        // [T, kQueryBlock]: column q is query q
  std::vector<uint32_t> queries;    // the block's queries as bf16 weight panels
  std::vector<uint32_t> probs;      // exp(scores - max) as bf16 weight panels, keys paired
  std::vector<float> rel_h, rel_w;  // [2 side - 1, kQueryBlock]: the block's queries on each table
  std::vector<float> bias_h, bias_w;  // [side, kQueryBlock]: the terms of key row ky / column kx
  std::vector<float> out_t;         // [head_dim, kQueryBlock]
};

constexpr float kLog2e = 1.44269504088896341f;

// bias[k * kQueryBlock + q] = log2(e) * proj[(pos(q) - k + side - 1) * kQueryBlock + q] for key
// coordinate k < side, query q < nq at coordinate pos(q); zero for the block's unused lanes.
template <typename Pos>
void bias_by_key(const float* proj, int64_t nq, int64_t side, Pos pos, std::vector<float>& bias) {
  bias.assign(static_cast<size_t>(side * kQueryBlock), 0.0f);
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t k = 0; k < side; ++k)
      bias[static_cast<size_t>(k * kQueryBlock + q)] = kLog2e * proj[(pos(q) - k + side - 1) * kQueryBlock + q];
}

// 2^t for t <= 0: t = k + r with r in [-1/2, 1/2], 2^r by a degree-5 polynomial fitted for
// relative error (7.5e-8 at most; a degree-4 one, at 2.6e-6, moved the attention's outputs seven
// times further from their rounded arithmetic), times 2^k by vscalefps, which goes to zero for very
// negative k without a clamp.
__m512 exp2_nonpositive(__m512 t) {
  const __m512 k = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(t, k);
  __m512 p = _mm512_set1_ps(1.3276471258e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.6755418580e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.5507132804e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.4022119714e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.9314696706e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0000000717e+0f));
  return _mm512_scalef_ps(p, k);
}

// Key k's scores of the 16 queries from column c: its sums times s (scale * log2(e)), plus the
// relative-position terms of key k where given.
inline __m512 scaled_scores(__m512 sums, __m512 s, const Scratch* rel, int64_t side_w, int64_t k, int64_t c) {
  if (!rel) return _mm512_mul_ps(sums, s);
  const float* bh = rel->bias_h.data() + (k / side_w) * kQueryBlock + c;
  const float* bw = rel->bias_w.data() + (k % side_w) * kQueryBlock + c;
  return _mm512_fmadd_ps(sums, s, _mm512_add_ps(_mm512_loadu_ps(bh), _mm512_loadu_ps(bw)));
}

// Where the bf16 GEMM runs on AMX tiles (bf16_gemm.h), so do these products: the same scaling,
// biases and maxima from each block's sums.
void scores_and_max_amx(const Bf16Activations& keys, const uint32_t* queries, int64_t nq, __m512 s, const Scratch* rel,
                        int64_t side_w, float* S, float* m) {
  amx_blocks(keys, queries, nq, nullptr, [&](int64_t k0, int64_t j0, const float* sums, int64_t live_rows, int64_t) {
    for (int64_t h = 0; h < NR; h += kLanes) {
      __m512 mx = _mm512_loadu_ps(m + j0 + h);
      for (int64_t r = 0; r < live_rows; ++r) {
        const int64_t k = k0 + r;
        const __m512 y = scaled_scores(_mm512_loadu_ps(sums + r * kAmxCols + h), s, rel, side_w, k, j0 + h);
        _mm512_storeu_ps(S + k * kQueryBlock + j0 + h, y);
        mx = _mm512_max_ps(mx, y);
      }
      _mm512_storeu_ps(m + j0 + h, mx);
    }
  });
}

// The block's scores, transposed: S[k * kQueryBlock + q] = log2(e) * (scale * <k, q> + the
// relative-position terms of key k = (ky, kx) for query q) (softmax in base 2: one multiply fewer
// per exponential), each K panel against each panel of 32 queries on the bf16 micro-kernel, scaled,
// biased and stored from its registers; the per-query maximum goes to m (kQueryBlock floats).
// Kept out of line: inlined into attend_block with write_outputs' transposes, GCC spilled the 28
// sums (a SAM global block went from 77 to 96 ms).
[[gnu::noinline]] void scores_and_max(const Bf16Activations& keys, const uint32_t* queries, int64_t nq, float scale, const Scratch* rel,
                    int64_t side_w, float* S, float* m) {
  const __m512 s = _mm512_set1_ps(scale * kLog2e);
  const int64_t pairs = keys.pairs(), qpanels = (nq + NR - 1) / NR, T = keys.rows();
  for (int64_t v = 0; v < 2 * qpanels; ++v) _mm512_storeu_ps(m + v * kLanes, _mm512_set1_ps(-3.0e38f));
  if (bf16_amx_active()) {
    scores_and_max_amx(keys, queries, nq, s, rel, side_w, S, m);
    return;
  }
  for (int64_t i = 0; i < keys.panels(); ++i) {
    const int64_t k0 = i * MR, live = std::min(MR, T - k0);
    for (int64_t j = 0; j < qpanels; ++j) {
      Bf16Sums acc0, acc1;
#pragma GCC unroll 14
      for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
      micro_kernel(keys.panel(i), queries + j * NR * pairs, pairs, acc0, acc1);
      __m512 max0 = _mm512_loadu_ps(m + j * NR), max1 = _mm512_loadu_ps(m + j * NR + kLanes);
      for (int64_t r = 0; r < live; ++r) {
        const int64_t k = k0 + r;
        const __m512 y0 = scaled_scores(acc0[r], s, rel, side_w, k, j * NR);
        const __m512 y1 = scaled_scores(acc1[r], s, rel, side_w, k, j * NR + kLanes);
        _mm512_storeu_ps(S + k * kQueryBlock + j * NR, y0);
        _mm512_storeu_ps(S + k * kQueryBlock + j * NR + kLanes, y1);
        max0 = _mm512_max_ps(max0, y0);
        max1 = _mm512_max_ps(max1, y1);
      }
      _mm512_storeu_ps(m + j * NR, max0);
      _mm512_storeu_ps(m + j * NR + kLanes, max1);
    }
  }
}

// 2^(scores - m) of keys 2p and 2p + 1 (a zero past T) as pair words in the weight panels of
// `probs` (query q is weight row q), summed per query into sum.
template <int NV>
void exp_to_pairs(const float* S, int64_t T, const float* m, uint32_t* probs, float* sum) {
  const int64_t pairs = (T + 1) / 2;
  __m512 mv[NV], acc[NV];
  for (int v = 0; v < NV; ++v) mv[v] = _mm512_loadu_ps(m + v * kLanes), acc[v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const float* a = S + 2 * p * kQueryBlock;
    const bool second = 2 * p + 1 < T;
    for (int v = 0; v < NV; ++v) {
      const __m512 ea = exp2_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(a + v * kLanes), mv[v]));
      const __m512 eb = second ? exp2_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(a + kQueryBlock + v * kLanes), mv[v]))
                               : _mm512_setzero_ps();
      acc[v] = _mm512_add_ps(acc[v], _mm512_add_ps(ea, eb));
      _mm512_storeu_si512(probs + (v / 2) * NR * pairs + p * NR + (v % 2) * kLanes, bf16_pair_words(ea, eb));
    }
  }
  for (int v = 0; v < NV; ++v) _mm512_storeu_ps(sum + v * kLanes, acc[v]);
}

// exp_to_pairs for nv vectors of queries.
void exp_to_pairs(int64_t nv, const float* S, int64_t T, const float* m, uint32_t* probs, float* sum) {
  static_assert(kQueryBlock == 4 * kLanes);
  switch (nv) {
    case 1: return exp_to_pairs<1>(S, T, m, probs, sum);
    case 2: return exp_to_pairs<2>(S, T, m, probs, sum);
    case 3: return exp_to_pairs<3>(S, T, m, probs, sum);
    default: return exp_to_pairs<4>(S, T, m, probs, sum);
  }
}

// out[q * ldo + c] = out_t[c * kQueryBlock + q] / sum[q] for q < nq, c < d: 16 x 16 blocks
// transposed in registers (a scalar strided loop was a fifth of a SAM window's attention).
[[gnu::noinline]] void write_outputs(const float* out_t, int64_t d, int64_t nq, const float* sum, float* out, int64_t ldo) {
  for (int64_t c0 = 0; c0 < d; c0 += kLanes) {
    const __mmask16 channels = lane_mask(d - c0);
    for (int64_t q0 = 0; q0 < nq; q0 += kLanes) {
      __m512i v[kLanes];
      for (int64_t i = 0; i < kLanes; ++i)
        v[i] = c0 + i < d ? _mm512_loadu_si512(out_t + (c0 + i) * kQueryBlock + q0) : _mm512_setzero_si512();
      transpose16(v);
      for (int64_t k = 0; k < std::min(kLanes, nq - q0); ++k)
        _mm512_mask_storeu_ps(out + (q0 + k) * ldo + c0, channels,
                              _mm512_div_ps(_mm512_castsi512_ps(v[k]), _mm512_set1_ps(sum[q0 + k])));
    }
  }
}

template <typename E>
void attend_block(const E* qkv, int64_t T, int64_t D, int64_t d, int64_t s, int64_t h, int64_t q0, int64_t nq,
                  float scale, const RelTables& tables, const HeadOperands& head, float* out, Scratch& w) {
  const RelPos2D* rel = tables.rel;
  const int64_t ld = 3 * D, nv = (nq + kLanes - 1) / kLanes, pairs = (T + 1) / 2;
  const E* Q = qkv + (s * T + q0) * ld + h * d;
  w.scores.resize(static_cast<size_t>(T * kQueryBlock));
  if constexpr (std::is_same_v<E, float>) pack_bf16_weights(Q, nq, d, ld, 1, w.queries);
  else pack_bf16_weights(Q, nq, d, ld, w.queries);
  if (rel) {
    const int64_t sh = rel->side_h, sw = rel->side_w;
    w.rel_h.resize(static_cast<size_t>((2 * sh - 1) * kQueryBlock));
    w.rel_w.resize(static_cast<size_t>((2 * sw - 1) * kQueryBlock));
    bf16_gemm(tables.h, w.queries.data(), nq, w.rel_h.data(), kQueryBlock);
    bf16_gemm(tables.w, w.queries.data(), nq, w.rel_w.data(), kQueryBlock);
    bias_by_key(w.rel_h.data(), nq, sh, [&](int64_t q) { return (q0 + q) / sw; }, w.bias_h);
    bias_by_key(w.rel_w.data(), nq, sw, [&](int64_t q) { return (q0 + q) % sw; }, w.bias_w);
  }
  alignas(64) float m[kQueryBlock], sum[kQueryBlock];
  scores_and_max(head.keys, w.queries.data(), nq, scale, rel ? &w : nullptr, rel ? rel->side_w : 1, w.scores.data(), m);
  w.probs.resize(static_cast<size_t>((nv + 1) / 2 * NR * pairs));
  exp_to_pairs(nv, w.scores.data(), T, m, w.probs.data(), sum);
  w.out_t.resize(static_cast<size_t>(d * kQueryBlock));
  bf16_gemm(head.values_t, w.probs.data(), nq, w.out_t.data(), kQueryBlock);
  write_outputs(w.out_t.data(), d, nq, sum, out + (s * T + q0) * D + h * d, D);
}

template <typename E>
void attend(const E* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel,
            float* out, ThreadPool& pool) {
  const int64_t D = n_heads * head_dim, ld = 3 * D;
  std::vector<HeadOperands> heads(static_cast<size_t>(n_seq * n_heads));
  pool.parallel_chunks(n_seq * n_heads, [&](int64_t i) {
    const E* base = qkv + (i / n_heads) * T * ld + (i % n_heads) * head_dim;
    heads[static_cast<size_t>(i)].keys.assign(base + D, T, head_dim, ld);
    heads[static_cast<size_t>(i)].values_t.assign_transposed(base + 2 * D, head_dim, T, ld);
  });
  RelTables tables;
  if (rel) {
    tables.rel = rel;
    tables.h = Bf16Activations(rel->table_h, 2 * rel->side_h - 1, head_dim, pool);
    tables.w = Bf16Activations(rel->table_w, 2 * rel->side_w - 1, head_dim, pool);
  }
  // A sequence's queries in blocks of kQueryBlock, the last one shorter (a window of 196 as 64 x 3 +
  // 4: the products' cost goes by weight panels of 32 queries, seven here against eight for four
  // blocks of 49).
  const int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  // Taken as threads come free (parallel_chunks): on a shared machine one core is often slower.
  pool.parallel_chunks(n_seq * n_heads * blocks, [&](int64_t task) {
    thread_local Scratch scratch;
    const int64_t i = task / blocks, q0 = (task % blocks) * kQueryBlock;
    attend_block(qkv, T, D, head_dim, i / n_heads, i % n_heads, q0, std::min(kQueryBlock, T - q0), scale, tables,
                 heads[static_cast<size_t>(i)], out, scratch);
  });
}

}  // namespace

void dense_attention_bf16(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                          const RelPos2D* rel, float* out, ThreadPool& pool) {
  attend(qkv, n_seq, T, n_heads, head_dim, scale, rel, out, pool);
}

void dense_attention_bf16(const uint16_t* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                          const RelPos2D* rel, float* out, ThreadPool& pool) {
  attend(qkv, n_seq, T, n_heads, head_dim, scale, rel, out, pool);
}

}  // namespace folio::kernels::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
