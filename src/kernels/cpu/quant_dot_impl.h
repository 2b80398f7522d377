// Internal: ISA-generic GEMV over block-quantised weights (core/quant_blocks.h) and 8-bit
// activations, instantiated once per instruction set from kernels_impl.h (same rules: include it
// only from an ISA file, after its target pragma; everything in an anonymous namespace).
//
// An integer traits struct I supplies 256-bit integer work on 32 bytes at a time:
//   bytes (32 x 8-bit), i32 (8 x int32), f32 (8 x float),
//   load(p), nibbles_lo(b) / nibbles_hi(b) (each byte's low / high 4 bits),
//   expand16(p) (16 bytes -> 32: low nibbles then high nibbles), sub8(b, k), or_(a, b),
//   bit_set(b, mask) (16 where the byte has the mask's bit, else 0), bits32(u) (byte i: 16 if bit i of u), q6(lo, hi, quarter),
//   abs8(w), sign8(x, w) (x negated where w < 0, 0 where w = 0),
//   dot_u8s8(u, s) -> i32 whose lane k is the exact sum of u[i] s[i] for i = 4k .. 4k + 3,
//   add(i32, i32), mul(i32, i32), set1(int), set2(a, b) (a in lanes 0-3, b in 4-7), hsum_i32(i32),
//   fzero(), fma(cvt(i32) by float, f32), hsum(f32) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), f16(h).
//
// Every integer sum is exact, and the floats are combined in one fixed order per format, so all
// ISAs (the scalar traits are the reference) give the same bits, whatever the thread split or batch:
//   q8_0, q4_0, q5_0: per block, lane k accumulates fma(isum_k, dw * dx, acc_k); then hsum.
//   K formats: per 256-block, s = fma(dw * dx, isum, s), minus the minima (fma(-(dmin dx), msum, s)).

namespace folio::kernels::detail {
namespace {

constexpr int kMaxQGroup = 4;  // activation rows sharing one pass over a weight row

template <class I>
struct FmtQ8_0 {
  using Act = ActQ8;
  static constexpr int64_t kElems = 32;
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static typename I::bytes weights(const uint8_t* b) { return I::load(b + offsetof(BlockQ8_0, q)); }
  static float scale(const uint8_t* b) {
    uint16_t d;
    std::memcpy(&d, b, 2);
    return I::f16(d);
  }
};

template <class I>
struct FmtQ4_0 {
  using Act = ActQ8;
  static constexpr int64_t kElems = 32;
  static constexpr size_t kBytes = sizeof(BlockQ4_0);
  static typename I::bytes weights(const uint8_t* b) { return I::sub8(I::expand16(b + offsetof(BlockQ4_0, qs)), 8); }
  static float scale(const uint8_t* b) {
    uint16_t d;
    std::memcpy(&d, b, 2);
    return I::f16(d);
  }
};

template <class I>
struct FmtQ5_0 {
  using Act = ActQ8;
  static constexpr int64_t kElems = 32;
  static constexpr size_t kBytes = sizeof(BlockQ5_0);
  static typename I::bytes weights(const uint8_t* b) {
    uint32_t qh;
    std::memcpy(&qh, b + offsetof(BlockQ5_0, qh), 4);
    return I::sub8(I::or_(I::expand16(b + offsetof(BlockQ5_0, qs)), I::bits32(qh)), 16);
  }
  static float scale(const uint8_t* b) {
    uint16_t d;
    std::memcpy(&d, b, 2);
    return I::f16(d);
  }
};

// q8_0 / q4_0 / q5_0: signed weights, blocks of 32, f16 scale.
template <class I, class F, int G>
inline void dot_rows_32(const uint8_t* w, int64_t nb, const ActQ8* x, int64_t xs, float* out) {
  typename I::f32 acc[G];
  for (int g = 0; g < G; ++g) acc[g] = I::fzero();
  for (int64_t b = 0; b < nb; ++b, w += F::kBytes) {
    const typename I::bytes wv = F::weights(w), wa = I::abs8(wv);
    const float dw = F::scale(w);
    for (int g = 0; g < G; ++g) {
      const ActQ8& a = x[g * xs + b];
      acc[g] = I::fma(I::dot_u8s8(wa, I::sign8(I::load(a.q), wv)), dw * a.d, acc[g]);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = I::hsum(acc[g]);
}

// The minima term of q4_k / q5_k: sum over sub-blocks j of m_j times the activations' sum there.
inline int32_t k4_min_sum(const uint8_t m[8], const ActQ8K& a) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  return s;
}

// q4_k (kFifth = false) and q5_k: unsigned codes, 8 sub-blocks of 32 with 6-bit scales and mins.
template <class I, bool kFifth, int G>
inline void dot_rows_k4(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  using Block = std::conditional_t<kFifth, BlockQ5K, BlockQ4K>;
  float sum[G] = {};
  for (int64_t b = 0; b < nb; ++b, w += sizeof(Block)) {
    const Block& blk = *reinterpret_cast<const Block*>(w);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) scale_min_k4(j, blk.scales, &sc[j], &m[j]);
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
      const typename I::i32 s_lo = I::set1(sc[2 * i]), s_hi = I::set1(sc[2 * i + 1]);
      for (int g = 0; g < G; ++g) {
        const int8_t* xq = x[g * xs + b].q + 64 * i;
        acc[g] = I::add(acc[g], I::mul(I::dot_u8s8(lo, I::load(xq)), s_lo));
        acc[g] = I::add(acc[g], I::mul(I::dot_u8s8(hi, I::load(xq + 32)), s_hi));
      }
    }
    const float d = I::f16(blk.d), dmin = I::f16(blk.dmin);
    for (int g = 0; g < G; ++g) {
      const ActQ8K& a = x[g * xs + b];
      sum[g] = std::fma(d * a.d, static_cast<float>(I::hsum_i32(acc[g])), sum[g]);
      sum[g] = std::fma(-(dmin * a.d), static_cast<float>(k4_min_sum(m, a)), sum[g]);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = sum[g];
}

// q6_k: 6-bit codes offset by 32, 16 groups of 16 with signed 8-bit scales.
template <class I, int G>
inline void dot_rows_q6k(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  float sum[G] = {};
  for (int64_t b = 0; b < nb; ++b, w += sizeof(BlockQ6K)) {
    const BlockQ6K& blk = *reinterpret_cast<const BlockQ6K*>(w);
    typename I::i32 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = I::set1(0);
    for (int h = 0; h < 2; ++h) {
      const typename I::bytes l0 = I::load(blk.ql + 64 * h), l1 = I::load(blk.ql + 64 * h + 32);
      const typename I::bytes qh = I::load(blk.qh + 32 * h);
      const typename I::bytes q[4] = {I::q6(I::nibbles_lo(l0), qh, 0), I::q6(I::nibbles_lo(l1), qh, 1),
                                      I::q6(I::nibbles_hi(l0), qh, 2), I::q6(I::nibbles_hi(l1), qh, 3)};
      for (int k = 0; k < 4; ++k) {
        const int8_t* s = blk.scales + 8 * h + 2 * k;
        const typename I::i32 sv = I::set2(s[0], s[1]);
        for (int g = 0; g < G; ++g)
          acc[g] = I::add(acc[g], I::mul(I::dot_u8s8(q[k], I::load(x[g * xs + b].q + 128 * h + 32 * k)), sv));
      }
    }
    const float d = I::f16(blk.d);
    for (int g = 0; g < G; ++g) {
      const ActQ8K& a = x[g * xs + b];
      int32_t offset = 0;
      for (int k = 0; k < 16; ++k) offset += blk.scales[k] * a.bsums[k];
      sum[g] = std::fma(d * a.d, static_cast<float>(I::hsum_i32(acc[g]) - 32 * offset), sum[g]);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = sum[g];
}

template <class I, DType T, int G>
inline void dot_rows_q(const uint8_t* w, int64_t nb, const void* x, int64_t xs, float* out) {
  if constexpr (T == DType::Q8_0) dot_rows_32<I, FmtQ8_0<I>, G>(w, nb, static_cast<const ActQ8*>(x), xs, out);
  else if constexpr (T == DType::Q4_0) dot_rows_32<I, FmtQ4_0<I>, G>(w, nb, static_cast<const ActQ8*>(x), xs, out);
  else if constexpr (T == DType::Q5_0) dot_rows_32<I, FmtQ5_0<I>, G>(w, nb, static_cast<const ActQ8*>(x), xs, out);
  else if constexpr (T == DType::Q4_K) dot_rows_k4<I, false, G>(w, nb, static_cast<const ActQ8K*>(x), xs, out);
  else if constexpr (T == DType::Q5_K) dot_rows_k4<I, true, G>(w, nb, static_cast<const ActQ8K*>(x), xs, out);
  else dot_rows_q6k<I, G>(w, nb, static_cast<const ActQ8K*>(x), xs, out);
}

// QGemvFn (kernel_table.h): rows [r0, r1) of W against n quantised activation rows, up to
// kMaxQGroup of them per pass over a weight row.
template <class I, DType T>
void qgemv(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n, float* y,
           int64_t ldy) {
  const bool k_format = T >= DType::Q4_K;
  const int64_t nb = in / (k_format ? 256 : 32);
  const size_t act_bytes = k_format ? sizeof(ActQ8K) : sizeof(ActQ8);
  const auto* xb = static_cast<const uint8_t*>(xq);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * rb;
    for (int64_t g0 = 0; g0 < n; g0 += kMaxQGroup) {
      float out[kMaxQGroup];
      const void* x = xb + static_cast<size_t>(g0 * nb) * act_bytes;
      switch (std::min<int64_t>(kMaxQGroup, n - g0)) {
        case 1: dot_rows_q<I, T, 1>(row, nb, x, nb, out); break;
        case 2: dot_rows_q<I, T, 2>(row, nb, x, nb, out); break;
        case 3: dot_rows_q<I, T, 3>(row, nb, x, nb, out); break;
        default: dot_rows_q<I, T, 4>(row, nb, x, nb, out); break;
      }
      for (int64_t g = 0; g < std::min<int64_t>(kMaxQGroup, n - g0); ++g) y[(g0 + g) * ldy + r] = out[g];
    }
  }
}

// Prefill converts tiles of quantised weights to f32 for sgemm: the reference dequantisers suffice
// (sgemm's O(n) work per weight dwarfs the conversion).
template <DType T>
void rows_to_f32_blocks(const uint8_t* w, size_t rb, int64_t in, int64_t rows, float* dst) {
  for (int64_t r = 0; r < rows; ++r) convert_to_f32(T, w + static_cast<size_t>(r) * rb, dst + r * in, in);
}

}  // namespace
}  // namespace folio::kernels::detail
