// Internal: the bf16 GEMM's micro-kernel (bf16_gemm.h) for the files that run it with their own
// start and finish: bf16_gemm.cpp and the attention's fused score pass. Include only from a file
// compiled for AVX512-BF16 (a target pragma enabling avx512f, bw and bf16), inside no namespace.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/bf16_gemm.h"

namespace folio::kernels::detail {

// The first n of 16 lanes (all for n >= 16, none for n <= 0).
inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? __mmask16{0xffff} : n <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << n) - 1);
}

// Adds to the sums of one kBf16PanelRows x kBf16PanelCols block (an activation panel a against a
// weight panel b; acc0[m] / acc1[m] hold row m, columns 0..15 / 16..31) `pairs` pairs of a and b.
// The caller starts and finishes the sums in its own body, so with this inlined the 28 sums stay
// in registers.
using Bf16Sums = __m512[kBf16PanelRows];
[[gnu::always_inline]] inline void micro_kernel(const uint32_t* a, const uint32_t* b, int64_t pairs, Bf16Sums& acc0,
                                                Bf16Sums& acc1) {
  for (int64_t p = 0; p < pairs; ++p, a += kBf16PanelRows, b += kBf16PanelCols) {
    const auto b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b));
    const auto b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + 16));
#pragma GCC unroll 14
    for (int m = 0; m < kBf16PanelRows; ++m) {
      const auto av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[m])));
      acc0[m] = _mm512_dpbf16_ps(acc0[m], av, b0);
      acc1[m] = _mm512_dpbf16_ps(acc1[m], av, b1);
    }
  }
}

}  // namespace folio::kernels::detail
