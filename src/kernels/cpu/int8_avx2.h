// Internal: the 256-bit integer traits of quant_dot_impl.h for AVX2 (also used by the AVX-512 table,
// whose VNNI variant overrides dot_u8s8). Include only from an ISA file, after its target pragma
// (which must enable at least avx2, fma, f16c), inside no namespace.
#pragma once

#include "kernels/cpu/quantize_act_avx2.h"

namespace folio::kernels::detail {
namespace {

struct IAvx2 {
  using bytes = __m256i;
  using i32 = __m256i;
  using i16 = __m256i;
  using f32 = __m256;
  static bytes load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static bytes nibbles_lo(bytes b) { return _mm256_and_si256(b, _mm256_set1_epi8(0x0f)); }
  static bytes nibbles_hi(bytes b) { return _mm256_and_si256(_mm256_srli_epi16(b, 4), _mm256_set1_epi8(0x0f)); }
  static bytes expand16(const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return nibbles_lo(_mm256_set_m128i(_mm_srli_epi16(v, 4), v));
  }
  static bytes splat8(int k) { return _mm256_set1_epi8(static_cast<char>(k)); }
  static bytes or_(bytes a, bytes b) { return _mm256_or_si256(a, b); }
  static bytes bit_set(bytes b, uint8_t mask) {
    const __m256i m = _mm256_set1_epi8(static_cast<char>(mask));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(b, m), m), _mm256_set1_epi8(16));
  }
  static bytes bits32(uint32_t u) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(u)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
  }
  static bytes with_bits32(bytes b, uint32_t u) { return or_(b, bits32(u)); }
  // Q6_K: 2 high bits of `quarter` from qh moved to bits 4-5 and joined to the low nibbles.
  static bytes q6(bytes lo, bytes qh, int quarter) {
    const __m256i m = _mm256_set1_epi8(0x30);
    __m256i h;
    switch (quarter) {
      case 0: h = _mm256_slli_epi16(qh, 4); break;
      case 1: h = _mm256_slli_epi16(qh, 2); break;
      case 2: h = qh; break;
      default: h = _mm256_srli_epi16(qh, 2); break;
    }
    return _mm256_or_si256(lo, _mm256_and_si256(h, m));
  }
  static bytes abs8(bytes w) { return _mm256_abs_epi8(w); }
  static bytes sign8(bytes x, bytes w) { return _mm256_sign_epi8(x, w); }
  // u8 x s8 pairs summed to saturating i16 (never saturates here: |u| <= 127, |s| <= 127 and
  // u <= 63 for the K formats), then pairs of i16 summed to i32: lane k = bytes 4k .. 4k + 3.
  static i32 dot_u8s8(bytes u, bytes s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }
  static i32 dot_u8s8_add(i32 acc, bytes u, bytes s) { return _mm256_add_epi32(acc, dot_u8s8(u, s)); }
  // The scale applied to maddubs' i16 pair sums by madd (instead of madd by 1): cheaper than an
  // i32 multiply after the fact, and exact (|pair sum| <= 16002, |scale| <= 127). VNNI keeps this.
  static i16 scale16(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a)));
  }
  static i32 dot_scaled(bytes u, bytes s, i16 scale) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale); }
  static i32 dot_scaled_add(i32 acc, bytes u, bytes s, i16 scale) { return _mm256_add_epi32(acc, dot_scaled(u, s, scale)); }
  // A block's 8 scales widened to i16 once, in both 128-bit halves; scale_pair(t, a, b) is then
  // scale16(scale a, scale b) in one shuffle (a, b: constants after unrolling).
  using scales = __m256i;
  static scales scales_u8(uint64_t s8) {
    return _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(s8))));
  }
  static scales scales_i8(const int8_t* s8) {
    return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8))));
  }
  static i16 scale_pair(scales t, int a, int b) {
    // Bytes 2e and 2e + 1 of a half: its i16 element e, in every lane of that half.
    const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(0x0100 + 0x0202 * b)),
                                          _mm_set1_epi16(static_cast<short>(0x0100 + 0x0202 * a)));
    return _mm256_shuffle_epi8(t, pick);
  }
  static i32 add(i32 a, i32 b) { return _mm256_add_epi32(a, b); }
  // Lane k: the exact sum of v[k]'s 8 lanes (a hadd tree: 4 + 2 hadds, the halves met in one add).
  static i32 sums8(const i32* v) {
    const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
  }
  static f32 load8(const float* p) { return _mm256_loadu_ps(p); }
  static f32 fmul(f32 a, f32 b) { return _mm256_mul_ps(a, b); }
  // The f16 at p + k kStride for k < 8 (one gather of their dwords, the low halves packed), or for
  // k < m (the rest 0; scalar: the last batch of a row, which may end the matrix).
  template <size_t kStride>
  static f32 f16_strided8(const uint8_t* p) {
    constexpr int s = static_cast<int>(kStride);
    const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(p),
                                                 _mm256_setr_epi32(0, s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s), 1);
    const __m256i low = _mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                     0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1));
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(low, 0x08)));
  }
  template <size_t kStride>
  static f32 f16_strided(const uint8_t* p, int64_t m) {
    alignas(16) uint16_t h[8] = {};
    for (int64_t k = 0; k < m; ++k) std::memcpy(&h[k], p + k * kStride, 2);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  }
  static i32 sub(i32 a, i32 b) { return _mm256_sub_epi32(a, b); }
  static i32 set1(int v) { return _mm256_set1_epi32(v); }
  static i32 sub_times32(i32 a, i32 b) { return _mm256_sub_epi32(a, _mm256_slli_epi32(b, 5)); }
  // Each vector's 8 lanes summed into one lane, G of them and their G twins at once: every hadd
  // halves the lanes of two vectors, and the halves' partial sums meet in one add at the end.
  template <int G>
  static i32 block_sums(const i32* s, const i32* m) {
    if constexpr (G == 1) {
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], m[0]), _mm256_setzero_si256());
      return _mm256_add_epi32(h, _mm256_permute2x128_si256(h, h, 0x81));  // lanes: S, M, 0, 0 | 0..
    } else if constexpr (G == 2) {
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(m[0], m[1]));
      return _mm256_add_epi32(h, _mm256_permute2x128_si256(h, h, 0x81));  // S0 S1 M0 M1 | 0..
    } else {
      const __m256i hs = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
      const __m256i hm = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
      return _mm256_add_epi32(_mm256_permute2x128_si256(hs, hm, 0x20), _mm256_permute2x128_si256(hs, hm, 0x31));
    }
  }
  static i32 k4_min_lanes(uint64_t m, const int16_t* v) {
    const __m128i a = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(m)));
    return _mm256_zextsi128_si256(_mm_madd_epi16(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v))));
  }
  static i32 q6k_offset_lanes(const int8_t* s, const int16_t* v) {
    const __m256i a = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
    return _mm256_madd_epi16(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)));
  }
  static f32 fzero() { return _mm256_setzero_ps(); }
  static f32 fma_lanes(i32 v, f32 s, f32 acc) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), s, acc); }
  // Built in registers: 8 floats stored one by one and loaded as a vector wait for the stores.
  // -dmin times dx is -(dmin dx) exactly.
  template <int G>
  static f32 block_factors(float d, float dmin, const float* dx) {
    __m128 f;
    if constexpr (G == 1) f = _mm_mul_ps(_mm_setr_ps(d, -dmin, 0.f, 0.f), _mm_set1_ps(dx[0]));
    else if constexpr (G == 2) f = _mm_mul_ps(_mm_setr_ps(d, d, -dmin, -dmin), _mm_setr_ps(dx[0], dx[1], dx[0], dx[1]));
    else {
      const __m128 x = _mm_loadu_ps(dx);
      return _mm256_mul_ps(_mm256_setr_m128(_mm_set1_ps(d), _mm_set1_ps(-dmin)), _mm256_setr_m128(x, x));
    }
    return _mm256_zextps128_ps256(f);
  }
  static void store8(float* p, f32 v) { _mm256_store_ps(p, v); }
  static float hsum(f32 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  // The matmul inputs' 8-bit quantisers (KernelTable::quantize_act).
  static void quantize_act_32(const float* x, void* dst, int64_t n) { QuantizeActAvx2::q8(x, static_cast<ActQ8*>(dst), n); }
  static void quantize_act_256(const float* x, void* dst, int64_t n) { QuantizeActAvx2::q8k(x, static_cast<ActQ8K*>(dst), n); }
};

// int8_gemm_impl.h's traits: a 16-row panel slice is two 256-bit vectors (rows 0-7, 8-15);
// 4 rows x 1 panel keep 8 accumulators in the 16 registers.
struct GAvx2 {
  using bytes = __m256i;
  using acc = __m256i;
  static constexpr int kVecs = 2, kRows = 4, kPanels = 1;
  static acc zero() { return _mm256_setzero_si256(); }
  static bytes bcast4(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static bytes load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static acc dot(acc c, bytes u, bytes s) { return _mm256_add_epi32(c, IAvx2::dot_u8s8(u, s)); }
  static void store(int32_t* p, acc v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

  using ints = __m256i;
  static constexpr int kFloats = 8;
  static ints zero_ints() { return _mm256_setzero_si256(); }
  static ints bits_of(const float* x) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)); }
  static ints max_ints(ints a, ints b) { return _mm256_max_epi32(a, b); }
  static int32_t hmax(ints v) {
    int32_t l[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), v);
    return *std::max_element(l, l + 8);
  }
  // max, mul, add, min, truncate: each rounded on its own, as the scalar loop does.
  static void codes(const float* x, float inv, uint8_t* q) {
    __m256 v = _mm256_max_ps(_mm256_loadu_ps(x), _mm256_setzero_ps());
    v = _mm256_min_ps(_mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(inv)), _mm256_set1_ps(0.5f)), _mm256_set1_ps(127.0f));
    const __m256i t = _mm256_cvttps_epi32(v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packus_epi16(w, w));
  }
};

}  // namespace
}  // namespace folio::kernels::detail
