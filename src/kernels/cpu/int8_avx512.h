// Internal: int8_gemm_impl.h's traits for AVX-512 (BW): a 16-row panel slice is one 512-bit vector.
// Without VNNI each dot is maddubs + madd + add and needs two temporaries, so the tile is 4 rows x
// 4 panels (16 accumulators); kernels_avx512_vnni.cpp widens it. Include only from an ISA file
// after its target pragma (avx512f, avx512bw), inside no namespace.
#pragma once

namespace folio::kernels::detail {
namespace {

struct GAvx512 {
  using bytes = __m512i;
  using acc = __m512i;
  static constexpr int kVecs = 1, kRows = 4, kPanels = 4;
  static acc zero() { return _mm512_setzero_si512(); }
  static bytes bcast4(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  static bytes load(const int8_t* p) { return _mm512_loadu_si512(p); }
  static acc dot(acc c, bytes u, bytes s) {
    return _mm512_add_epi32(c, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
  }
  static void store(int32_t* p, acc v) { _mm512_storeu_si512(p, v); }

  using ints = __m512i;
  static constexpr int kFloats = 16;
  static ints zero_ints() { return _mm512_setzero_si512(); }
  static ints bits_of(const float* x) { return _mm512_loadu_si512(x); }
  static ints max_ints(ints a, ints b) { return _mm512_max_epi32(a, b); }
  static int32_t hmax(ints v) {
    int32_t l[16];
    _mm512_storeu_si512(l, v);
    return *std::max_element(l, l + 16);
  }
  // max, mul, add, min, truncate: each rounded on its own, as the scalar loop does.
  static void codes(const float* x, float inv, uint8_t* q) {
    __m512 v = _mm512_max_ps(_mm512_loadu_ps(x), _mm512_setzero_ps());
    v = _mm512_min_ps(_mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(inv)), _mm512_set1_ps(0.5f)), _mm512_set1_ps(127.0f));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
};

}  // namespace
}  // namespace folio::kernels::detail
