// Internal: ISA-generic bodies of the CPU kernels, instantiated once per instruction set.
//
// Include this only from an ISA file (kernels_*.cpp), after that file has included every header
// this one needs (<cstdint>, <cstring>, core/dtype.h, kernel_table.h) and, for SIMD files, after
// its `#pragma GCC target`: the pragma then applies to everything defined here. Everything lives
// in an anonymous namespace so the AVX-512 instantiations can never be merged by the linker with
// the AVX2 or scalar ones (which would put AVX-512 code on CPUs without it).
//
// A traits struct V supplies the vector type and primitives:
//   reg, W (lanes, a divisor of 32), kGemvInputs, kGemvRows and kGemvLanes (the float GEMV's tile:
//   input rows each weight row is applied to at once, weight rows read side by side when there are
//   several inputs, accumulators per row and input),
//   zero, set1, load (f32), load_f16, load_bf16, load_i8 (W int8 -> f32), store, fma(a, b, c) = a*b+c,
//   mul, add, hsum, f16 (scalar f16 -> f32); SIMD traits also load_u4 (W 4-bit codes, two per byte,
//   low nibble first -> f32).
// Traits I (quant_dot_impl.h) supply the integer dot products of the block formats, traits G
// (int8_gemm_impl.h) the integer GEMM's register tile.

#include "kernels/cpu/int8_gemm_impl.h"
#include "kernels/cpu/quant_dot_impl.h"
#include "kernels/cpu/vec_activations.h"

namespace folio::kernels::detail {
namespace {

// ---- weight loaders: stored element type -> V::reg of f32 ------------------------------------
// A loader reads weights in chunks of 32 elements (one q8_0 block): chunk() prepares a context for
// elements [c, c+32) and load(ctx, k) returns elements c + k*W .. c + k*W + W-1. Non-blocked types
// also support load1 (W elements at any i) and scalar (one element) for rows not a multiple of 32.

template <class V>
struct LoadF32 {
  static constexpr bool kBlocked = false;
  static constexpr size_t kChunkBytes = 32 * 4;  // bytes of 32 elements
  struct Ctx {
    const float* p;
  };
  static const float* at(const uint8_t* row, int64_t i) { return reinterpret_cast<const float*>(row) + i; }
  static Ctx chunk(const uint8_t* row, int64_t c) { return {at(row, c)}; }
  static typename V::reg load(const Ctx& ctx, int k) { return V::load(ctx.p + k * V::W); }
  static typename V::reg load1(const uint8_t* row, int64_t i) { return V::load(at(row, i)); }
  static float scalar(const uint8_t* row, int64_t i) { return *at(row, i); }
};

template <class V>
struct LoadBF16 {
  static constexpr bool kBlocked = false;
  static constexpr size_t kChunkBytes = 32 * 2;
  struct Ctx {
    const uint16_t* p;
  };
  static const uint16_t* at(const uint8_t* row, int64_t i) { return reinterpret_cast<const uint16_t*>(row) + i; }
  static Ctx chunk(const uint8_t* row, int64_t c) { return {at(row, c)}; }
  static typename V::reg load(const Ctx& ctx, int k) { return V::load_bf16(ctx.p + k * V::W); }
  static typename V::reg load1(const uint8_t* row, int64_t i) { return V::load_bf16(at(row, i)); }
  static float scalar(const uint8_t* row, int64_t i) { return bf16_to_f32(*at(row, i)); }
};

template <class V>
struct LoadF16 {
  static constexpr bool kBlocked = false;
  static constexpr size_t kChunkBytes = 32 * 2;
  struct Ctx {
    const uint16_t* p;
  };
  static const uint16_t* at(const uint8_t* row, int64_t i) { return reinterpret_cast<const uint16_t*>(row) + i; }
  static Ctx chunk(const uint8_t* row, int64_t c) { return {at(row, c)}; }
  static typename V::reg load(const Ctx& ctx, int k) { return V::load_f16(ctx.p + k * V::W); }
  static typename V::reg load1(const uint8_t* row, int64_t i) { return V::load_f16(at(row, i)); }
  static float scalar(const uint8_t* row, int64_t i) { return V::f16(*at(row, i)); }
};

// q8_0: value = scale * q. Multiplying each converted int8 vector by the broadcast scale gives
// exactly the f32 weight convert_to_f32 produces, so q8_0 matches the f32 path bit for bit.
template <class V>
struct LoadQ8 {
  static constexpr bool kBlocked = true;
  static constexpr size_t kChunkBytes = sizeof(BlockQ8_0);
  struct Ctx {
    const int8_t* q;
    typename V::reg d;
  };
  static Ctx chunk(const uint8_t* row, int64_t c) {
    const uint8_t* b = row + static_cast<size_t>(c / 32) * sizeof(BlockQ8_0);
    uint16_t s;
    std::memcpy(&s, b, sizeof s);  // blocks are only 2-byte aligned at best
    return {reinterpret_cast<const int8_t*>(b + offsetof(BlockQ8_0, q)), V::set1(V::f16(s))};
  }
  static typename V::reg load(const Ctx& ctx, int k) { return V::mul(V::load_i8(ctx.q + k * V::W), ctx.d); }
};

// ---- GEMV of float weights --------------------------------------------------------------------
// Each (weight row, input row) pair sums into V::kGemvLanes accumulators, vector k of the row going
// to accumulator k % kGemvLanes, added in order at the end: that order depends on nothing but the
// row, so a row's result is the same bits whatever the batch, the thread split or the tile it was
// read in. One accumulator on AVX-512: a row alone is then one FMA chain, which still outruns
// memory (16 bf16 weights per FMA latency), and a tile of 4 rows x 4 inputs fits in registers.
//
// One input row (a single sequence's decode): one weight row at a time, front to back, so each
// thread's weights are one sequential stream (8-row tiles, or two rows side by side, read less;
// docs/measurements.md), asked into L2 kPrefetchRows rows ahead: the hardware prefetcher alone
// left the Intel Xeon's two cores 20-25% below that (docs/benchmarks.md).
// Several input rows (passes side by side, a server batch): tiles of V::kGemvRows rows x up to
// V::kGemvInputs inputs, each weight vector loaded once for the tile's inputs and each input vector
// once for its rows, and the rows kPrefetchRows ahead asked for while the tile works. One row at a
// time was compute-bound there (five loads per four FMAs) and its misses did not overlap (about
// 0.6x the bytes per second of these tiles; docs/measurements.md).
constexpr int64_t kPrefetchRows = 8;
// Long rows stream well on their own; the prefetch hints are for rows of a few KiB, whose streams
// end before the hardware prefetcher has ramped up on them (docs/measurements.md). The hints ask
// for L2 (prefetcht1; quant_dot_impl.h says why).
constexpr size_t kPrefetchMaxRowBytes = 4096;

template <class V, class L, int R, int G>
inline void gemv_tile(const uint8_t* row, size_t rb, int64_t in, const float* x, float* y, int64_t ldy, bool prefetch) {
  using reg = typename V::reg;
  constexpr int W = V::W, A = V::kGemvLanes;
  constexpr size_t kElemBytes = L::kChunkBytes / 32;
  reg acc[R][G][A];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g)
      for (int a = 0; a < A; ++a) acc[r][g][a] = V::zero();
  // Integer arithmetic: past the last row these addresses lie outside W (prefetches cannot fault,
  // but out-of-bounds pointer arithmetic would be undefined).
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(row) + kPrefetchRows * rb;
  int64_t c = 0;
  for (; c + A * W <= in; c += A * W) {
    if (prefetch && (c * kElemBytes) % 64 == 0)
      for (int r = 0; r < R; ++r) __builtin_prefetch(reinterpret_cast<const void*>(ahead + r * rb + c * kElemBytes), 0, 2);
    for (int a = 0; a < A; ++a) {
      reg wv[R];
      for (int r = 0; r < R; ++r) wv[r] = L::load1(row + r * rb, c + a * W);
      for (int g = 0; g < G; ++g) {
        const reg xv = V::load(x + g * in + c + a * W);
        for (int r = 0; r < R; ++r) acc[r][g][a] = V::fma(wv[r], xv, acc[r][g][a]);
      }
    }
  }
  for (; c + W <= in; c += W)
    for (int r = 0; r < R; ++r) {
      const reg wv = L::load1(row + r * rb, c);
      for (int g = 0; g < G; ++g) acc[r][g][0] = V::fma(wv, V::load(x + g * in + c), acc[r][g][0]);
    }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) {
      reg sum = acc[r][g][0];
      for (int a = 1; a < A; ++a) sum = V::add(sum, acc[r][g][a]);
      float s = V::hsum(sum);
      for (int64_t i = c; i < in; ++i) s += L::scalar(row + r * rb, i) * x[g * in + i];
      y[g * ldy + r] = s;
    }
}

// R rows from `row` against `count` (1..V::kGemvInputs) input rows.
template <class V, class L, int R, int G = 1>
void gemv_tile_inputs(const uint8_t* row, size_t rb, int64_t in, const float* x, int64_t count, float* y, int64_t ldy,
                      bool prefetch) {
  if constexpr (G < V::kGemvInputs) {
    if (count != G) return gemv_tile_inputs<V, L, R, G + 1>(row, rb, in, x, count, y, ldy, prefetch);
  }
  gemv_tile<V, L, R, G>(row, rb, in, x, y, ldy, prefetch);
}

// Rows [r0, r1) of w against n input rows (x: [n][in]) into y (row g at y + g * ldy).
template <class V, class L>
void gemv(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const float* x, int64_t n, float* y,
          int64_t ldy) {
  static_assert(!L::kBlocked, "block formats have their own integer GEMV (quant_dot_impl.h)");
  const bool prefetch = rb <= kPrefetchMaxRowBytes;
  if (n == 1) {
    for (int64_t r = r0; r < r1; ++r) gemv_tile<V, L, 1, 1>(w + static_cast<size_t>(r) * rb, rb, in, x, y + r, ldy, prefetch);
    return;
  }
  constexpr int64_t R = V::kGemvRows, P = V::kGemvInputs;
  // Rows go in blocks of 8; every group of P inputs runs over the whole block before the next
  // group, so the block's rows come from L1 again (the first group asks for the rows ahead).
  constexpr int64_t kBlockRows = 8;
  static_assert(kBlockRows % R == 0);
  for (int64_t b = r0; b < r1; b += kBlockRows) {
    const int64_t e = std::min(r1, b + kBlockRows);
    for (int64_t g = 0; g < n; g += P) {
      const float* xg = x + g * in;
      float* yg = y + g * ldy;
      const int64_t count = std::min(P, n - g);
      const bool pf = prefetch && g == 0;
      int64_t r = b;
      for (; r + R <= e; r += R) gemv_tile_inputs<V, L, R>(w + static_cast<size_t>(r) * rb, rb, in, xg, count, yg + r, ldy, pf);
      for (; r < e; ++r) gemv_tile_inputs<V, L, 1>(w + static_cast<size_t>(r) * rb, rb, in, xg, count, yg + r, ldy, pf);
    }
  }
}

// ---- weight conversion for the BLAS path -------------------------------------------------------
template <class V, class L>
void rows_to_f32(const uint8_t* w, size_t rb, int64_t in, int64_t rows, float* dst) {
  constexpr int K = 32 / V::W;
  for (int64_t r = 0; r < rows; ++r, dst += in) {
    const uint8_t* row = w + r * rb;
    int64_t c = 0;
    for (; c + 32 <= in; c += 32) {
      typename L::Ctx ctx = L::chunk(row, c);
      for (int k = 0; k < K; ++k) V::store(dst + c + k * V::W, L::load(ctx, k));
    }
    if constexpr (!L::kBlocked) {
      for (; c + V::W <= in; c += V::W) V::store(dst + c, L::load1(row, c));
      for (; c < in; ++c) dst[c] = L::scalar(row, c);
    }
  }
}

// ---- vector helpers for attention over KV caches ------------------------------------------------
template <class V, class L>
void axpy(float alpha, const void* x, float* y, int64_t n) {
  const auto* row = static_cast<const uint8_t*>(x);
  const typename V::reg va = V::set1(alpha);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(y + i, V::fma(va, L::load1(row, i), V::load(y + i)));
  for (; i < n; ++i) y[i] += alpha * L::scalar(row, i);
}

constexpr int64_t kAttnPrefetchRows = 16;

// R rows of dot<V, L> at once: the rows' independent FMA chains interleave and share each load of
// q. Every row sums in exactly dot's order (two accumulators taking alternate vectors, then the
// scalar tail), so a row's score does not depend on whether it was computed in a group or alone.
template <class V, class L, int R>
void dot_group(const float* q, const uint8_t* const* row, int64_t n, float scale, float* out) {
  using reg = typename V::reg;
  reg s0[R], s1[R];
  for (int r = 0; r < R; ++r) s0[r] = s1[r] = V::zero();
  int64_t i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {
    const reg qa = V::load(q + i), qb = V::load(q + i + V::W);
    for (int r = 0; r < R; ++r) {
      s0[r] = V::fma(qa, L::load1(row[r], i), s0[r]);
      s1[r] = V::fma(qb, L::load1(row[r], i + V::W), s1[r]);
    }
  }
  if (i + V::W <= n) {
    const reg qa = V::load(q + i);
    for (int r = 0; r < R; ++r) s0[r] = V::fma(qa, L::load1(row[r], i), s0[r]);
    i += V::W;
  }
  for (int r = 0; r < R; ++r) {
    float sum = V::hsum(V::add(s0[r], s1[r]));
    for (int64_t j = i; j < n; ++j) sum += q[j] * L::scalar(row[r], j);
    out[r] = scale * sum;
  }
}

template <class V, class L>
float dot(const float* a, const void* b, int64_t n) {
  const auto* row = static_cast<const uint8_t*>(b);
  float out;
  dot_group<V, L, 1>(a, &row, n, 1.f, &out);
  return out;
}

// Scores of one query against many cached rows (one attention head's keys): the loop over rows
// lives here, not in the caller, so a step costs no call or dispatch per row, and the next rows
// are prefetched (they are `stride` apart: the other heads' slices sit in between). Rows go four at a time
// through dot_group.
template <class V, class L>
void dot_rows(const float* q, const uint8_t* rows, size_t stride, int64_t count, int64_t n, float scale, float* out) {
  const size_t row_len = reinterpret_cast<const uint8_t*>(L::at(rows, n)) - rows;
  constexpr int R = 4;
  int64_t t = 0;
  // Rows are short and strided, which the hardware prefetcher follows poorly: ask for the row
  // kAttnPrefetchRows ahead, every cache line of it, while it is still in this span (past its end
  // lie other heads' rows, read much later: fetching them now only doubles the traffic; the span
  // after this one is prefetched by the caller, prefetch_span_rows).
  auto prefetch = [&](int64_t t) {
    if (t + kAttnPrefetchRows >= count) return;
    const uint8_t* ahead = rows + static_cast<size_t>(t + kAttnPrefetchRows) * stride;
    for (size_t o = 0; o < row_len; o += 64) __builtin_prefetch(ahead + o);
  };
  for (; t + R <= count; t += R) {
    const uint8_t* row[R];
    for (int r = 0; r < R; ++r) {
      row[r] = rows + static_cast<size_t>(t + r) * stride;
      prefetch(t + r);
    }
    dot_group<V, L, R>(q, row, n, scale, out + t);
  }
  for (; t < count; ++t) {
    const uint8_t* row = rows + static_cast<size_t>(t) * stride;
    prefetch(t);
    dot_group<V, L, 1>(q, &row, n, scale, out + t);
  }
}

// y[d .. d + B*W) += sum_t p[t] * row t over those channels, y held in B registers while all rows
// stream past.
template <class V, class L, int B>
void axpy_block(const float* p, const uint8_t* rows, size_t stride, int64_t count, int64_t d, float* y) {
  using reg = typename V::reg;
  reg acc[B];
  for (int k = 0; k < B; ++k) acc[k] = V::load(y + d + k * V::W);
  for (int64_t t = 0; t < count; ++t) {
    const uint8_t* row = rows + static_cast<size_t>(t) * stride;
    if (t + kAttnPrefetchRows < count) {  // within the span, as in dot_rows
      const uint8_t* ahead = reinterpret_cast<const uint8_t*>(L::at(row + kAttnPrefetchRows * stride, d));
      for (size_t o = 0; o < B * V::W * sizeof(*L::at(row, 0)); o += 64) __builtin_prefetch(ahead + o);
    }
    const reg pt = V::set1(p[t]);
    for (int k = 0; k < B; ++k) acc[k] = V::fma(pt, L::load1(row, d + k * V::W), acc[k]);
  }
  for (int k = 0; k < B; ++k) V::store(y + d + k * V::W, acc[k]);
}

// Calls block.template operator()<B>(d) for channel blocks [d, d + B*W) covering [0, n) in blocks
// of B = 8, 4, 2 and 1 vectors (a head of 32 or 96 channels must not fall back to a loop through
// memory); returns where the channels left over begin.
template <class V, class Block>
int64_t for_vector_blocks(int64_t n, Block&& block) {
  int64_t d = 0;
  for (; d + 8 * V::W <= n; d += 8 * V::W) block.template operator()<8>(d);
  if (d + 4 * V::W <= n) block.template operator()<4>(d), d += 4 * V::W;
  if (d + 2 * V::W <= n) block.template operator()<2>(d), d += 2 * V::W;
  if (d + V::W <= n) block.template operator()<1>(d), d += V::W;
  return d;
}

// y += sum_t p[t] * row t (one head's values weighted by its probabilities), in register blocks
// (for_vector_blocks), then the channels left over one by one. Each y[i] sums over t in order
// whatever the blocking, so results do not depend on it.
template <class V, class L>
void axpy_rows(const float* p, const uint8_t* rows, size_t stride, int64_t count, int64_t n, float* y) {
  const int64_t d = for_vector_blocks<V>(n, [&]<int B>(int64_t d) { axpy_block<V, L, B>(p, rows, stride, count, d, y); });
  if (d < n)
    for (int64_t t = 0; t < count; ++t) {
      const uint8_t* row = rows + static_cast<size_t>(t) * stride;
      for (int64_t i = d; i < n; ++i) y[i] += p[t] * L::scalar(row, i);
    }
}

// ---- quantised KV rows (kv_quant.h): integer codes read straight into f32 lanes ---------------

// q8 codes: one int8 per channel.
template <class V>
struct LoadCodeI8 {
  static const int8_t* at(const uint8_t* row, int64_t i) { return reinterpret_cast<const int8_t*>(row) + i; }
  static typename V::reg load1(const uint8_t* row, int64_t i) { return V::load_i8(at(row, i)); }
  static float scalar(const uint8_t* row, int64_t i) { return static_cast<float>(*at(row, i)); }
};

// q4 codes: two channels per byte, the even one in the low nibble. load1 is called at multiples of
// W only (even channels), so it starts on a byte.
template <class V>
struct LoadCodeU4 {
  static const uint8_t* at(const uint8_t* row, int64_t i) { return row + i / 2; }
  static typename V::reg load1(const uint8_t* row, int64_t i) {
    if constexpr (V::W == 1) return scalar(row, i);
    else return V::load_u4(at(row, i));
  }
  static float scalar(const uint8_t* row, int64_t i) { return static_cast<float>((row[i / 2] >> ((i & 1) * 4)) & 0xf); }
};

// Key scores over quantised rows: out[t] = <qs, codes of row t> + bias, where the caller folded the
// per-channel scales (and the softmax scale) into qs and the per-channel minima into bias.
template <class V, class L>
void dot_code_rows(const float* qs, const uint8_t* codes, size_t stride, int64_t count, int64_t n, float bias, float* out) {
  dot_rows<V, L>(qs, codes, stride, count, n, 1.f, out);
  if (bias != 0.f)
    for (int64_t t = 0; t < count; ++t) out[t] += bias;
}

// y[d .. d + B*W) += sum_t p[t] * (s_t * code_t + m_t) for one value group's channels, with s_t,
// m_t the f16 parameters of row t's group (m only for q4), y in B registers while the rows stream.
// The minima add the same sum_t p[t] m_t to every channel: it is summed once, beside the FMAs.
template <class V, class L, int B, bool kMin>
void axpy_code_block(const float* p, const uint8_t* codes, size_t stride, const uint16_t* params, size_t param_stride,
                     int64_t count, int64_t d, float* y) {
  using reg = typename V::reg;
  reg acc[B];
  for (int k = 0; k < B; ++k) acc[k] = V::load(y + d + k * V::W);
  float min_sum = 0;
  for (int64_t t = 0; t < count; ++t) {
    const uint8_t* row = codes + static_cast<size_t>(t) * stride;
    const uint16_t* g = params + static_cast<size_t>(t) * param_stride;
    const reg a = V::set1(p[t] * V::f16(g[0]));
    if constexpr (kMin) min_sum += p[t] * V::f16(g[1]);
    for (int k = 0; k < B; ++k) acc[k] = V::fma(a, L::load1(row, d + k * V::W), acc[k]);
  }
  const reg m = V::set1(min_sum);
  for (int k = 0; k < B; ++k) V::store(y + d + k * V::W, kMin ? V::add(acc[k], m) : acc[k]);
}

// Values over quantised rows: one head's `nseg` segments of `seg` channels, segment j taking its
// parameters from group first_group + j of each row (params + t * param_stride + group * nparams).
// Each segment goes in register blocks (for_vector_blocks), then channel by channel; every y[i]
// sums over t in order, whatever the blocking.
template <class V, class L, bool kMin>
void axpy_code_rows(const float* p, const uint8_t* codes, size_t stride, const uint16_t* params, size_t param_stride,
                    int64_t first_group, int64_t seg, int64_t nseg, int64_t count, float* y) {
  constexpr int64_t np = kMin ? 2 : 1;
  for (int64_t j = 0; j < nseg; ++j) {
    const uint8_t* cj = reinterpret_cast<const uint8_t*>(L::at(codes, j * seg));
    const uint16_t* pj = params + (first_group + j) * np;
    float* yj = y + j * seg;
    int64_t d = for_vector_blocks<V>(
        seg, [&]<int B>(int64_t d) { axpy_code_block<V, L, B, kMin>(p, cj, stride, pj, param_stride, count, d, yj); });
    for (; d < seg; ++d)
      for (int64_t t = 0; t < count; ++t) {
        const uint16_t* g = pj + static_cast<size_t>(t) * param_stride;
        const float code = L::scalar(cj + static_cast<size_t>(t) * stride, d);
        yj[d] += p[t] * (V::f16(g[0]) * code + (kMin ? V::f16(g[np - 1]) : 0.f));
      }
  }
}

template <class V>
double exp_sum(float* x, int64_t n, float m) {
  const typename V::reg neg_m = V::set1(-m);
  typename V::reg acc = V::zero();
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    typename V::reg e = V::exp(V::add(V::load(x + i), neg_m));
    V::store(x + i, e);
    acc = V::add(acc, e);
  }
  double s = V::hsum(acc);
  for (; i < n; ++i) s += (x[i] = std::exp(x[i] - m));
  return s;
}

// x = 0.5 x (1 + erf(x / sqrt 2)): the exact GELU of the SAM MLPs.
template <class V>
void gelu_erf(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(x + i, gelu_erf_of<V>(V::load(x + i)));
  for (; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

// x = x * sigmoid(1.702 x): CLIP's quick_gelu.
template <class V>
void quick_gelu(float* x, int64_t n) {
  int64_t i = 0;
  if constexpr (V::W > 1)
    for (; i + V::W <= n; i += V::W) V::store(x + i, quick_gelu_of<V>(V::load(x + i)));
  for (; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

// sum over i < n of f(i) in double, in eight lanes (element i into lane i % 8; a single running
// sum is one dependent add per element), the lanes then added in order, then the tail.
template <typename F>
[[gnu::always_inline]] inline double eight_lane_sum(int64_t n, F f) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] += f(i + k);
  double s = 0.0;
  for (int k = 0; k < 8; ++k) s += lane[k];
  for (; i < n; ++i) s += f(i);
  return s;
}

// LayerNorm rows (nn_ops.h). Every operation is rounded on its own (no FMA contraction, which
// GCC would otherwise apply in the FMA-capable files) and the sums go lane by lane as written, so
// every table gives the scalar table's bits; the vector tables' speed comes from the compiler
// turning the eight double lanes and the last loop into vectors.
[[gnu::optimize("fp-contract=off")]] void layer_norm_rows(const float* x, const float* w, const float* b, float* y,
                                                          int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const double mean = eight_lane_sum(n, [&](int64_t i) { return static_cast<double>(xr[i]); }) / static_cast<double>(n);
    const double ss = eight_lane_sum(n, [&](int64_t i) {
      const double d = xr[i] - mean;
      return d * d;
    });
    const float rstd = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) * rstd * w[i] + b[i];
  }
}

template <class V, class I, class G>
constexpr KernelTable make_table() {
  return KernelTable{
      {&gemv<V, LoadF32<V>>, &gemv<V, LoadF16<V>>, &gemv<V, LoadBF16<V>>},
      {&qgemv<I, DType::Q8_0>, &qgemv<I, DType::Q4_0>, &qgemv<I, DType::Q5_0>, &qgemv<I, DType::Q5_1>, &qgemv<I, DType::Q4_K>,
       &qgemv<I, DType::Q5_K>, &qgemv<I, DType::Q6_K>, qgemv_x16_of<I, DType::Q4_K_X16>(),
       qgemv_x16_of<I, DType::Q6_K_X16>(), qgemv_x16_of<I, DType::Q8_0_X16>(), qgemv_x16_of<I, DType::Q5_0_X16>()},
      {&rows_to_f32<V, LoadF32<V>>, &rows_to_f32<V, LoadF16<V>>, &rows_to_f32<V, LoadBF16<V>>,
       &rows_to_f32<V, LoadQ8<V>>, &rows_to_f32_blocks<DType::Q4_0>, &rows_to_f32_blocks<DType::Q5_0>,
       &rows_to_f32_blocks<DType::Q5_1>,
       &rows_to_f32_blocks<DType::Q4_K>,
       &rows_to_f32_blocks<DType::Q5_K>, &rows_to_f32_blocks<DType::Q6_K>, &rows_to_f32_x16<DType::Q4_K_X16>,
       &rows_to_f32_x16<DType::Q6_K_X16>, &rows_to_f32_x16<DType::Q8_0_X16>, &rows_to_f32_x16<DType::Q5_0_X16>},
      {&dot<V, LoadF32<V>>, &dot<V, LoadF16<V>>, &dot<V, LoadBF16<V>>},
      {&axpy<V, LoadF32<V>>, &axpy<V, LoadF16<V>>, &axpy<V, LoadBF16<V>>},
      {&dot_rows<V, LoadF32<V>>, &dot_rows<V, LoadF16<V>>, &dot_rows<V, LoadBF16<V>>},
      {&axpy_rows<V, LoadF32<V>>, &axpy_rows<V, LoadF16<V>>, &axpy_rows<V, LoadBF16<V>>},
      {&dot_code_rows<V, LoadCodeI8<V>>, &dot_code_rows<V, LoadCodeU4<V>>},
      {&axpy_code_rows<V, LoadCodeI8<V>, false>, &axpy_code_rows<V, LoadCodeU4<V>, true>},
      &exp_sum<V>,
      &gelu_erf<V>,
      &quick_gelu<V>,
      &gemm_int8_sums<G>,
      &max_bits<G>,
      &quantize_u7<G>,
      {&I::quantize_act_32, &I::quantize_act_256},
      &layer_norm_rows,
  };
}

}  // namespace
}  // namespace folio::kernels::detail
