// Internal: ISA-generic GEMV over block-quantised weights (core/quant_blocks.h) and 8-bit
// activations, instantiated once per instruction set from kernels_impl.h (same rules: include it
// only from an ISA file, after its target pragma; everything in an anonymous namespace).
//
// An integer traits struct I supplies 256-bit integer work on 32 bytes at a time:
//   bytes (32 x 8-bit), i32 (8 x int32), f32 (8 x float),
//   load(p), nibbles_lo(b) / nibbles_hi(b) (each byte's low / high 4 bits),
//   expand16(p) (16 bytes -> 32: low nibbles then high nibbles), splat8(k), or_(a, b),
//   bit_set(b, mask) (16 where the byte has the mask's bit, else 0), with_bits32(b, u) (b with 16 added
//   to byte i where bit i of u is set; b's bytes below 16), q6(lo, hi, quarter),
//   abs8(w), sign8(x, w) (x negated where w < 0, 0 where w = 0),
//   dot_u8s8(u, s) -> i32 whose lane k is the exact sum of u[i] s[i] for i = 4k .. 4k + 3,
//   dot_u8s8_add(acc, u, s) = add(acc, dot_u8s8(u, s)),
//   dot_scaled(u, s, scale16(a, b)) -> the same lanes times a (lanes 0-3) or b (lanes 4-7), exactly,
//   dot_scaled_add(acc, u, s, scale) = add(acc, dot_scaled(u, s, scale)), scales_u8(u64) / scales_i8(p)
//   (8 scale bytes unpacked once; u64: byte i is scale i) and scale_pair(scales, a, b) = scale16(scale a, scale b),
//   add(i32, i32), sub(i32, i32), set1(int), dot8_u8(m (8 bytes of a u64), v[8]) and dot16_i8(s[16], v[16]) (exact
//   int32 sums of u8 / int8 times int16),
//   fzero(), fma(cvt(i32) by float, f32), hsum(f32) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), f16(h).
//
// Every integer sum is exact, and the floats are combined in one fixed order per format, so all
// ISAs (the scalar traits are the reference) give the same bits, whatever the thread split or batch:
//   q8_0, q4_0, q5_0: per block, lane k accumulates fma(isum_k, dw * dx, acc_k); then hsum.
//   q5_1: the same, and one float adding fma(m_w, s_x) per block; out = hsum + that float.
//   K formats: per 256-block, s = fma(dw * dx, isum, s), minus the minima (fma(-(dmin dx), msum, s)).

namespace folio::kernels::detail {
namespace {

constexpr int kMaxQGroup = 2;  // activation rows sharing one pass over a tile of weight rows

// Block formats of 32: weights() gives signed codes (q8_0) or unsigned ones (kUnsigned) with
// kOffset to subtract (q4_0: 8, q5_0: 16, q5_1: 0). Unsigned codes go straight into the u8 x s8
// product, and the offset comes off once per activation block for all rows of a tile (offset times
// its 4-element sums). q5_1 adds its block minimum instead (kMin): m_w times the activation block's
// s (d_x times its code sum, f16), into one float per row as llama.cpp does. All start with their
// f16 scale (q5_1's minimum follows it).
template <class I>
float block_scale(const uint8_t* b) {
  uint16_t d;
  std::memcpy(&d, b, 2);  // blocks are only 2-byte aligned
  return I::f16(d);
}

template <class I>
struct FmtQ8_0 {
  static constexpr int kOffset = 0;
  static constexpr bool kUnsigned = false, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static typename I::bytes weights(const uint8_t* b) { return I::load(b + offsetof(BlockQ8_0, q)); }
};

template <class I>
struct FmtQ4_0 {
  static constexpr int kOffset = 8;
  static constexpr bool kUnsigned = true, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ4_0);
  static typename I::bytes weights(const uint8_t* b) { return I::expand16(b + offsetof(BlockQ4_0, qs)); }
};

// q5_0 / q5_1 codes: Q4_0's nibbles with the fifth bits from the little-endian qh.
template <class I>
typename I::bytes five_bit_codes(const uint8_t* qs, const uint8_t* qh_bytes) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  return I::with_bits32(I::expand16(qs), qh);
}

template <class I>
struct FmtQ5_0 {
  static constexpr int kOffset = 16;
  static constexpr bool kUnsigned = true, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ5_0);
  static typename I::bytes weights(const uint8_t* b) {
    return five_bit_codes<I>(b + offsetof(BlockQ5_0, qs), b + offsetof(BlockQ5_0, qh));
  }
};

template <class I>
struct FmtQ5_1 {
  static constexpr int kOffset = 0;
  static constexpr bool kUnsigned = true, kMin = true;
  static constexpr size_t kBytes = sizeof(BlockQ5_1);
  static typename I::bytes weights(const uint8_t* b) {
    return five_bit_codes<I>(b + offsetof(BlockQ5_1, qs), b + offsetof(BlockQ5_1, qh));
  }
  static float min(const uint8_t* b) { return block_scale<I>(b + offsetof(BlockQ5_1, m)); }
};

// Weight rows of block formats are short (1-2 KiB for a 1,280-wide matrix), so each row's stream
// ends before the hardware prefetcher has ramped up on it: as the float GEMV does (kernels_impl.h),
// each block asks for the same block kQPrefetchRows rows ahead. Measured on [27392, 1280] q8_0
// (one matmul of one row, repeated): 2.66 -> 1.65 ms on one thread, 1.21 -> 0.73 ms on two.
// Addresses past the matrix are formed as integers and only prefetched (which cannot fault).
constexpr int64_t kQPrefetchRows = 8;

inline void prefetch_ahead(const uint8_t* block, size_t rb, size_t bytes) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(block) + kQPrefetchRows * rb;
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(reinterpret_cast<const void*>(p + o));
}

// Each function below computes R weight rows (rb bytes apart) against G activation rows (xs blocks
// apart) into out[r * G + g]. The R x G sums are independent chains, which hides the latency of the
// per-block float FMA; each chain still adds its blocks in order, so a row's result does not depend
// on R, G or the thread split.

// q8_0 / q4_0 / q5_0: signed weights, blocks of 32, f16 scale.
template <class I, class F, int R, int G>
inline void dot_rows_32(const uint8_t* w, size_t rb, int64_t nb, const ActQ8* x, int64_t xs, float* out) {
  typename I::f32 acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = I::fzero();
  float mins[R][G] = {};  // q5_1: the blocks' minima against the activation sums
  for (int64_t b = 0; b < nb; ++b) {
    typename I::bytes xv[G];
    typename I::i32 minus_offset[G];  // the dots start from it: one fused multiply-add on VNNI
    for (int g = 0; g < G; ++g) {
      xv[g] = I::load(x[g * xs + b].q);
      if constexpr (F::kOffset != 0) minus_offset[g] = I::sub(I::set1(0), I::dot_u8s8(I::splat8(F::kOffset), xv[g]));
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w + r * rb + static_cast<size_t>(b) * F::kBytes;
      prefetch_ahead(blk, rb, F::kBytes);
      const typename I::bytes wv = F::weights(blk);
      const float dw = block_scale<I>(blk);
      for (int g = 0; g < G; ++g) {
        typename I::i32 dot;
        if constexpr (F::kOffset != 0) dot = I::dot_u8s8_add(minus_offset[g], wv, xv[g]);
        else if constexpr (F::kUnsigned) dot = I::dot_u8s8(wv, xv[g]);
        else dot = I::dot_u8s8(I::abs8(wv), I::sign8(xv[g], wv));
        acc[r][g] = I::fma(dot, dw * x[g * xs + b].d, acc[r][g]);
        if constexpr (F::kMin) mins[r][g] = std::fma(F::min(blk), x[g * xs + b].s, mins[r][g]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) out[r * G + g] = I::hsum(acc[r][g]) + mins[r][g];
}

// K formats: each 256-block's exact integer sums (8 lanes) join 8 float lanes with one FMA by
// d_w d_x; the block's scalar term (q4_k / q5_k: minus dmin_w d_x times the minima against the
// activations' sub-block sums; q6_k: minus 32 d_w d_x times the scales against its 16-sums) goes to
// one float. Out: hsum(lanes) + scalar. No horizontal sum per block: that epilogue was half the time.
// KSums holds those R x G accumulators.
template <class I, int R, int G>
struct KSums {
  typename I::f32 lanes[R][G];
  float scalar[R][G] = {};
  KSums() {
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < G; ++g) lanes[r][g] = I::fzero();
  }
  void write(float* out) const {
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < G; ++g) out[r * G + g] = I::hsum(lanes[r][g]) + scalar[r][g];
  }
};

// q4_k (kFifth = false) and q5_k: unsigned codes, 8 sub-blocks of 32 with 6-bit scales and mins.
template <class I, bool kFifth, int R, int G>
inline void dot_rows_k4(const uint8_t* w, size_t rb, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  using Block = std::conditional_t<kFifth, BlockQ5K, BlockQ4K>;
  KSums<I, R, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const Block& blk = *reinterpret_cast<const Block*>(w + r * rb + static_cast<size_t>(b) * sizeof(Block));
      prefetch_ahead(reinterpret_cast<const uint8_t*>(&blk), rb, sizeof(Block));
      const ScalesMinsK4 sm = scales_mins_k4(blk.scales);
      const typename I::scales sv = I::scales_u8(sm.sc);
      typename I::i32 acc[G];
      for (int g = 0; g < G; ++g) acc[g] = I::set1(0);
      typename I::bytes qh{};
      if constexpr (kFifth) qh = I::load(blk.qh);
      for (int i = 0; i < 4; ++i) {
        const typename I::bytes q = I::load(blk.qs + 32 * i);
        typename I::bytes lo = I::nibbles_lo(q), hi = I::nibbles_hi(q);
        if constexpr (kFifth) {
          lo = I::or_(lo, I::bit_set(qh, static_cast<uint8_t>(1u << (2 * i))));
          hi = I::or_(hi, I::bit_set(qh, static_cast<uint8_t>(2u << (2 * i))));
        }
        const typename I::i16 s_lo = I::scale_pair(sv, 2 * i, 2 * i), s_hi = I::scale_pair(sv, 2 * i + 1, 2 * i + 1);
        for (int g = 0; g < G; ++g) {
          const int8_t* xq = x[g * xs + b].q + 64 * i;
          acc[g] = I::dot_scaled_add(acc[g], lo, I::load(xq), s_lo);
          acc[g] = I::dot_scaled_add(acc[g], hi, I::load(xq + 32), s_hi);
        }
      }
      const float d = I::f16(blk.d), dmin = I::f16(blk.dmin);
      for (int g = 0; g < G; ++g) {
        const ActQ8K& a = x[g * xs + b];
        sums.lanes[r][g] = I::fma(acc[g], d * a.d, sums.lanes[r][g]);
        sums.scalar[r][g] = std::fma(-(dmin * a.d), static_cast<float>(I::dot8_u8(sm.m, a.bsums32)), sums.scalar[r][g]);
      }
    }
  }
  sums.write(out);
}

// q6_k: 6-bit codes offset by 32, 16 groups of 16 with signed 8-bit scales.
template <class I, int R, int G>
inline void dot_rows_q6k(const uint8_t* w, size_t rb, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  KSums<I, R, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const BlockQ6K& blk = *reinterpret_cast<const BlockQ6K*>(w + r * rb + static_cast<size_t>(b) * sizeof(BlockQ6K));
      prefetch_ahead(reinterpret_cast<const uint8_t*>(&blk), rb, sizeof(BlockQ6K));
      typename I::i32 acc[G];
      for (int g = 0; g < G; ++g) acc[g] = I::set1(0);
      for (int h = 0; h < 2; ++h) {
        const typename I::scales st = I::scales_i8(blk.scales + 8 * h);
        const typename I::bytes l0 = I::load(blk.ql + 64 * h), l1 = I::load(blk.ql + 64 * h + 32);
        const typename I::bytes qh = I::load(blk.qh + 32 * h);
        const typename I::bytes q[4] = {I::q6(I::nibbles_lo(l0), qh, 0), I::q6(I::nibbles_lo(l1), qh, 1),
                                        I::q6(I::nibbles_hi(l0), qh, 2), I::q6(I::nibbles_hi(l1), qh, 3)};
        for (int k = 0; k < 4; ++k) {
          const typename I::i16 sv = I::scale_pair(st, 2 * k, 2 * k + 1);
          for (int g = 0; g < G; ++g)
            acc[g] = I::dot_scaled_add(acc[g], q[k], I::load(x[g * xs + b].q + 128 * h + 32 * k), sv);
        }
      }
      const float d = I::f16(blk.d);
      for (int g = 0; g < G; ++g) {
        const ActQ8K& a = x[g * xs + b];
        sums.lanes[r][g] = I::fma(acc[g], d * a.d, sums.lanes[r][g]);
        sums.scalar[r][g] = std::fma(-32.f * (d * a.d), static_cast<float>(I::dot16_i8(blk.scales, a.bsums)), sums.scalar[r][g]);
      }
    }
  }
  sums.write(out);
}

template <class I, DType T, int R, int G>
inline void dot_rows_q(const uint8_t* w, size_t rb, int64_t nb, const void* x, int64_t xs, float* out) {
  const auto* a8 = static_cast<const ActQ8*>(x);
  const auto* a8k = static_cast<const ActQ8K*>(x);
  if constexpr (T == DType::Q8_0) dot_rows_32<I, FmtQ8_0<I>, R, G>(w, rb, nb, a8, xs, out);
  else if constexpr (T == DType::Q4_0) dot_rows_32<I, FmtQ4_0<I>, R, G>(w, rb, nb, a8, xs, out);
  else if constexpr (T == DType::Q5_0) dot_rows_32<I, FmtQ5_0<I>, R, G>(w, rb, nb, a8, xs, out);
  else if constexpr (T == DType::Q5_1) dot_rows_32<I, FmtQ5_1<I>, R, G>(w, rb, nb, a8, xs, out);
  else if constexpr (T == DType::Q4_K) dot_rows_k4<I, false, R, G>(w, rb, nb, a8k, xs, out);
  else if constexpr (T == DType::Q5_K) dot_rows_k4<I, true, R, G>(w, rb, nb, a8k, xs, out);
  else dot_rows_q6k<I, R, G>(w, rb, nb, a8k, xs, out);
}

// R rows against the n activation rows, kMaxQGroup of them per pass over the rows.
template <class I, DType T, int R>
inline void qgemv_tile(const uint8_t* w, size_t rb, int64_t nb, const uint8_t* xb, size_t act_bytes, int64_t n,
                       float* y, int64_t ldy, int64_t r) {
  for (int64_t g0 = 0; g0 < n; g0 += kMaxQGroup) {
    const int64_t gn = std::min<int64_t>(kMaxQGroup, n - g0);
    float out[R * kMaxQGroup];
    const void* x = xb + static_cast<size_t>(g0 * nb) * act_bytes;
    if (gn == 1) dot_rows_q<I, T, R, 1>(w, rb, nb, x, nb, out);
    else dot_rows_q<I, T, R, kMaxQGroup>(w, rb, nb, x, nb, out);
    for (int i = 0; i < R; ++i)
      for (int64_t g = 0; g < gn; ++g) y[(g0 + g) * ldy + r + i] = out[i * gn + g];
  }
}

// QGemvFn (kernel_table.h): rows [r0, r1) of W against n quantised activation rows, four rows at
// a time (then one) so that several independent sums are in flight.
template <class I, DType T>
void qgemv(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n, float* y,
           int64_t ldy) {
  const bool k_format = T >= DType::Q4_K;
  const int64_t nb = in / (k_format ? 256 : 32);
  const size_t act_bytes = k_format ? sizeof(ActQ8K) : sizeof(ActQ8);
  const auto* xb = static_cast<const uint8_t*>(xq);
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) qgemv_tile<I, T, 4>(w + static_cast<size_t>(r) * rb, rb, nb, xb, act_bytes, n, y, ldy, r);
  for (; r < r1; ++r) qgemv_tile<I, T, 1>(w + static_cast<size_t>(r) * rb, rb, nb, xb, act_bytes, n, y, ldy, r);
}

// Prefill converts tiles of quantised weights to f32 for sgemm: the reference dequantisers suffice
// (sgemm's O(n) work per weight dwarfs the conversion).
template <DType T>
void rows_to_f32_blocks(const uint8_t* w, size_t rb, int64_t in, int64_t rows, float* dst) {
  for (int64_t r = 0; r < rows; ++r) convert_to_f32(T, w + static_cast<size_t>(r) * rb, dst + r * in, in);
}

}  // namespace
}  // namespace folio::kernels::detail
