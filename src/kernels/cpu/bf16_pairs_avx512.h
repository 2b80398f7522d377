// Internal: rounding f32 to the bf16 pair words the bf16 GEMM multiplies (bf16_gemm.h), 16 at a
// time. Include only from a file compiled for AVX512-BF16 (a target pragma enabling avx512f, bw and
// bf16), inside no namespace.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace folio::kernels::detail {

// Word i = bf16(a[i]) | bf16(b[i]) << 16 for the 16 lanes (round to nearest even, as
// vcvtne2ps2bf16 does): element i of a row paired with element i of the next one.
inline __m512i bf16_pair_words(__m512 a, __m512 b) {
  // cvtne2ps puts a's 16 values in halves 0..15 and b's in 16..31; word i takes halves i and 16 + i.
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
}

}  // namespace folio::kernels::detail
