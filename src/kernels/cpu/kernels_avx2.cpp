// AVX2 + FMA + F16C kernels (8 f32 lanes). Compiled for that target by the pragma below, not by a
// global -mavx2, so the rest of the binary still runs on plain x86-64; used only when best_isa()
// says the CPU has these instructions.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "kernels/cpu/kernel_table.h"
#include "core/row_interleave.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace folio::kernels::detail {
namespace {

struct VAvx2 {
  using reg = __m256;
  static constexpr int W = 8;
  // Float GEMV tile: 1 row x 2 inputs x 2 accumulators (two FMA chains per row and input: one ymm
  // chain, 8 bf16 weights per FMA latency, would be slower than memory on a row alone). Two rows
  // side by side measured slower here than one (docs/measurements.md).
  static constexpr int kGemvInputs = 2;
  static constexpr int kGemvRows = 1;
  static constexpr int kGemvLanes = 2;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg set1(float v) { return _mm256_set1_ps(v); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static reg load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static reg load_bf16(const uint16_t* p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static reg load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // 8 4-bit codes (4 bytes, low nibble first) -> f32 in channel order.
  static reg load_u4(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    const __m128i b = _mm_cvtsi32_si128(static_cast<int>(w)), mask = _mm_set1_epi8(0x0f);
    const __m128i x = _mm_unpacklo_epi8(_mm_and_si128(b, mask), _mm_and_si128(_mm_srli_epi16(b, 4), mask));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(x));
  }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static float hsum(reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float f16(uint16_t h) { return _cvtsh_ss(h); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg abs(reg a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  // |mag| with the sign of `sign`.
  static reg copysign(reg mag, reg sign) {
    const reg s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sign));
  }
  // exp(x) for softmax numerators (x <= 0 here; clamped to exp's float range): x = k ln2 + r,
  // exp(r) by a degree-6 polynomial (Cephes coefficients), times 2^k built in the exponent bits.
  // Relative error ~2 ulp.
  static reg exp(reg x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
    reg k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    reg r = _mm256_fmadd_ps(k, _mm256_set1_ps(-0.693359375f), x);
    r = _mm256_fmadd_ps(k, _mm256_set1_ps(2.12194440e-4f), r);
    reg p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23)));
  }
};

}  // namespace
}  // namespace folio::kernels::detail

#include "kernels/cpu/int8_avx2.h"
#include "kernels/cpu/kernels_impl.h"

namespace folio::kernels::detail {
namespace {
constexpr KernelTable kAvx2Table = make_table<VAvx2, IAvx2, GAvx2>();
}  // namespace
}  // namespace folio::kernels::detail

#pragma GCC pop_options

namespace folio::kernels::detail {
const KernelTable& avx2_table() { return kAvx2Table; }
}  // namespace folio::kernels::detail
