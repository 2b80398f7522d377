// AVX-512 kernels with VNNI: the AVX-512 table, except that the integer dot products of the block-
// quantised weights use vpdpbusd (one instruction for the u8 x s8 products and their sums in 4s that
// the AVX2 traits do with maddubs + madd). The lanes hold the same exact sums, so results are the same
// bits as every other table's. Used only when the CPU reports avx512vnni (kernels_avx512.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "kernels/cpu/kernel_table.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC bug 105593 (both), as in kernels_avx512.cpp

#include "kernels/cpu/vec_avx512.h"
#include "kernels/cpu/int8_avx2.h"
#include "kernels/cpu/int8_avx512.h"

namespace folio::kernels::detail {
namespace {
struct IVnni : IAvx2 {
  static i32 dot_u8s8(bytes u, bytes s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
  static i32 dot_u8s8_add(i32 acc, bytes u, bytes s) { return _mm256_dpbusd_epi32(acc, u, s); }
  // The fifth bits of q5 codes as a byte mask (AVX-512BW/VL): 16 added where set, in one masked add
  // instead of AVX2's broadcast, shuffle, compare and two ands.
  static bytes with_bits32(bytes b, uint32_t u) {
    return _mm256_mask_add_epi8(b, static_cast<__mmask32>(u), b, _mm256_set1_epi8(16));
  }
  // vpdpwssd adds the scaled pair sums straight into the accumulator (madd + add in one).
  static i32 dot_scaled_add(i32 acc, bytes u, bytes s, i16 scale) {
    return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), scale);
  }
  // quant_dot_impl.h's 512-bit traits: the K formats' decode rows two chunks at a time.
  struct Wide {
    using bytes = __m512i;
    using i32 = __m512i;
    using scales = __m128i;  // a block's 8 scales as i16
    static bytes load(const void* p) { return _mm512_loadu_si512(p); }
    static bytes load2(const void* lo, const void* hi) {
      return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
                                _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
    }
    static bytes bcast32(const void* p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
    static bytes nibbles_lo(bytes b) { return _mm512_and_si512(b, _mm512_set1_epi8(0x0f)); }
    static bytes nibbles_hi(bytes b) { return _mm512_and_si512(_mm512_srli_epi16(b, 4), _mm512_set1_epi8(0x0f)); }
    static bytes or_(bytes a, bytes b) { return _mm512_or_si512(a, b); }
    static __m512i halves8(uint8_t lo, uint8_t hi) {
      return _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(lo)), _mm256_set1_epi8(static_cast<char>(hi)), 1);
    }
    static __m512i halves16(int lo, int hi) {
      return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(lo)), _mm256_set1_epi16(static_cast<short>(hi)), 1);
    }
    // 16 where the byte has its half's (single-bit) mask, else 0.
    static bytes bit_set2(bytes b, uint8_t lo, uint8_t hi) {
      return _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(b, halves8(lo, hi)), _mm512_set1_epi8(16));
    }
    // q6 with qh shifted left by sl (low half) and sh (high half); a negative shift is to the right.
    static bytes q6_2(bytes lo, bytes qh, int sl, int sh) {
      const __m512i h = sl >= 0 && sh >= 0 ? _mm512_sllv_epi16(qh, halves16(sl, sh)) : _mm512_srlv_epi16(qh, halves16(-sl, -sh));
      return _mm512_or_si512(lo, _mm512_and_si512(h, _mm512_set1_epi8(0x30)));
    }
    static scales scales_u8(uint64_t s8) { return _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(s8))); }
    static scales scales_i8(const int8_t* s8) { return _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8))); }
    static __m512i scale_pair(scales t, int a, int b) { return _mm512_permutexvar_epi16(halves16(a, b), _mm512_castsi128_si512(t)); }
    static __m512i scale_quads(scales t, int first) {
      const __m512i idx = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16(static_cast<short>(first + 1)), _mm_set1_epi16(static_cast<short>(first)))),
          _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(first + 3)), _mm_set1_epi16(static_cast<short>(first + 2))), 1);
      return _mm512_permutexvar_epi16(idx, _mm512_castsi128_si512(t));
    }
    static i32 dot_scaled_add(i32 acc, bytes u, bytes s, __m512i scale) {
      return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(u, s), scale);
    }
    static i32 add(i32 a, i32 b) { return _mm512_add_epi32(a, b); }
    static i32 zero() { return _mm512_setzero_si512(); }
    static __m256i fold(i32 v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }
  };
};
// The integer GEMM's tile with vpdpbusd: no temporaries, so 6 rows x 4 panels (24 accumulators).
struct GAvx512Vnni : GAvx512 {
  static constexpr int kRows = 6, kPanels = 4;
  static acc dot(acc c, bytes u, bytes s) { return _mm512_dpbusd_epi32(c, u, s); }
};
}  // namespace
}  // namespace folio::kernels::detail

#include "kernels/cpu/kernels_impl.h"

namespace folio::kernels::detail {
namespace {
constexpr KernelTable kAvx512VnniTable = make_table<VAvx512, IVnni, GAvx512Vnni>();
}  // namespace
}  // namespace folio::kernels::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace folio::kernels::detail {
const KernelTable& avx512_vnni_table() { return kAvx512VnniTable; }
}  // namespace folio::kernels::detail
