// Internal: the activation quantisers of core/quant_blocks.h (quantize_act_q8, quantize_act_q8k)
// in AVX2, the same bytes as those references for every input. A decode step quantises each
// matmul input on the calling thread while the pool waits; at ~2.2 us per 896 floats (libm's
// roundf per element) that was ~4% of a quantised OCR decoder's step. Include only from an ISA file
// after its target pragma (avx2, fma, f16c at least), inside no namespace.
#pragma once

namespace folio::kernels::detail {
namespace {

struct QuantizeActAvx2 {
  static float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
  }
  static __m256 abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  // max(|x|) over n floats (n a multiple of 8). A NaN is passed over, as std::max(m, fabs(x))
  // and the reference's `>` pass it over: vmaxps returns its second operand when either is NaN.
  static float absmax(const float* x, int64_t n) {
    __m256 m = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) m = _mm256_max_ps(abs(_mm256_loadu_ps(x + i)), m);
    return hmax(m);
  }
  // Four vectors of int32 codes (each in [-128, 127]) as 32 bytes in element order.
  static void store_codes(const __m256i q[4], int8_t* dst) {
    const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  // std::round (halves away from zero) of integral-range floats: the truncation plus one step
  // toward the sign where the fraction, exact as v - trunc(v), is at least one half.
  static __m256 round_half_away(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 half = _mm256_cmp_ps(abs(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 step = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_and_ps(half, step));
  }
  static float through_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

  static void q8(const float* x, ActQ8* dst, int64_t n) {
    for (int64_t k = 0; k < n / 32; ++k, x += 32) {
      const float d = absmax(x, 32) / 127.f, id = d > 0.f ? 1.f / d : 0.f;
      dst[k].d = through_f16(d);
      __m256i q[4], sum = _mm256_setzero_si256();
      for (int v = 0; v < 4; ++v) {
        q[v] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), _mm256_set1_ps(id))));
        sum = _mm256_add_epi32(sum, q[v]);
      }
      store_codes(q, dst[k].q);
      dst[k].s = through_f16(d * static_cast<float>(hsum(sum)));
    }
  }

  static void q8k(const float* x, ActQ8K* dst, int64_t n) {
    for (int64_t k = 0; k < n / 256; ++k, x += 256) {
      ActQ8K& b = dst[k];
      const float amax = absmax(x, 256);
      if (!(amax > 0.f)) {  // zero (the reference's signed_absmax is 0 then)
        std::memset(&b, 0, sizeof b);
        continue;
      }
      // The first element of that magnitude, with its sign (signed_absmax keeps the first).
      int64_t at = 0;
      for (;; at += 8) {
        const int mask = _mm256_movemask_ps(_mm256_cmp_ps(abs(_mm256_loadu_ps(x + at)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
        if (mask) {
          at += __builtin_ctz(static_cast<unsigned>(mask));
          break;
        }
      }
      const float iscale = -127.f / x[at];
      for (int g = 0; g < 8; ++g) {  // 32 codes: lrint (the rounding mode's nearest, even on ties), at most 127
        __m256i q[4];
        for (int v = 0; v < 4; ++v)
          q[v] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_set1_ps(iscale), _mm256_loadu_ps(x + 32 * g + 8 * v))),
                                  _mm256_set1_epi32(127));
        store_codes(q, b.q + 32 * g);
        const int32_t lo = hsum(_mm256_add_epi32(q[0], q[1])), hi = hsum(_mm256_add_epi32(q[2], q[3]));
        b.bsums[2 * g] = static_cast<int16_t>(lo);
        b.bsums[2 * g + 1] = static_cast<int16_t>(hi);
        b.bsums32[g] = static_cast<int16_t>(lo + hi);
      }
      b.d = 1.f / iscale;
      std::memset(b.unused, 0, sizeof b.unused);
    }
  }
};

}  // namespace
}  // namespace folio::kernels::detail
