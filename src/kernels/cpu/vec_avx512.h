// Internal: the AVX-512 float traits of kernels_impl.h (16 f32 lanes), shared by the AVX-512 kernel
// files. Include only from an ISA file, after a target pragma enabling avx512f/bw/vl/dq, avx2, fma,
// f16c, inside no namespace.
#pragma once

namespace folio::kernels::detail {
namespace {

struct VAvx512 {
  using reg = __m512;
  static constexpr int W = 16;
  // Float GEMV tile (kernels_impl.h): 4 weight rows x 4 input rows, one accumulator each, plus
  // the inputs' and a row's vectors, in 32 zmm registers (16 + 4 + 1).
  static constexpr int kGemvInputs = 4;
  static constexpr int kGemvRows = 4;
  static constexpr int kGemvLanes = 1;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg set1(float v) { return _mm512_set1_ps(v); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static reg load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static reg load_bf16(const uint16_t* p) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static reg load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // 16 4-bit codes (8 bytes, low nibble first) -> f32 in channel order.
  static reg load_u4(const uint8_t* p) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0f);
    const __m128i x = _mm_unpacklo_epi8(_mm_and_si128(b, mask), _mm_and_si128(_mm_srli_epi16(b, 4), mask));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(x));
  }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static float hsum(reg v) {
    __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  static reg abs(reg a) { return _mm512_abs_ps(a); }
  // |mag| with the sign of `sign`: bitwise m ? mag : sign (ternary-logic table 0xca).
  static reg copysign(reg mag, reg sign) {
    const __m512i m = _mm512_set1_epi32(0x7fffffff);
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(m, _mm512_castps_si512(mag), _mm512_castps_si512(sign), 0xca));
  }
  // exp(x) for softmax numerators (x <= 0 here; clamped to exp's float range): x = k ln2 + r,
  // exp(r) by a degree-6 polynomial (Cephes coefficients), times 2^k built in the exponent bits.
  // Relative error ~2 ulp.
  static reg exp(reg x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
    reg k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = _mm512_fmadd_ps(k, _mm512_set1_ps(-0.693359375f), x);
    r = _mm512_fmadd_ps(k, _mm512_set1_ps(2.12194440e-4f), r);
    reg p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23)));
  }
};

}  // namespace
}  // namespace folio::kernels::detail
