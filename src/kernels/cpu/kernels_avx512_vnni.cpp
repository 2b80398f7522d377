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
#include <vector>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "core/row_interleave.h"
#include "kernels/cpu/cpu_features.h"
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
// KernelTable::qgemv[Q4_K_X16] and [Q6_K_X16] (q4k_x16_vnni.h, q6k_x16_vnni.h, after kernels_impl.h,
// whose prefetching they use).
void qgemv_q4k_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                        float* y, int64_t ldy);
void qgemv_q6k_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                        float* y, int64_t ldy);
void qgemv_q8_0_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                         float* y, int64_t ldy);
void qgemv_q5_0_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                         float* y, int64_t ldy);

struct IVnni : IAvx2 {
  template <DType X>
  static constexpr QGemvFn qgemv_x16 = X == DType::Q4_K_X16   ? &qgemv_q4k_x16_vnni
                                       : X == DType::Q6_K_X16 ? &qgemv_q6k_x16_vnni
                                       : X == DType::Q8_0_X16 ? &qgemv_q8_0_x16_vnni
                                                              : &qgemv_q5_0_x16_vnni;
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
    // A q4_k / q5_k block's 12 packed bytes as [scales 0-7 | minima 0-7] (scales_mins_k4 in
    // shuffles and masks). The 16-byte load reads 4 bytes past them, still inside the block.
    using k4_params = __m128i;
    static k4_params k4_scales_mins(const uint8_t* s12) {
      const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s12));
      // Low bits: scales 0-3 from bytes 0-3, 4-7 from the low nibbles of 8-11; minima 0-3 from
      // bytes 4-7, 4-7 from the high nibbles of 8-11. Top 2 bits of 4-7: those of bytes 0-3 / 4-7.
      const __m128i a = _mm_shuffle_epi8(s, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
      const __m128i top = _mm_shuffle_epi8(s, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
      const __m128i low = _mm_or_si128(_mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
                                       _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
      return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30)));
    }
    static scales k4_scales(k4_params p) { return _mm_cvtepu8_epi16(p); }
    static __m256i k4_min_lanes(k4_params p, const int16_t* v) {
      const __m128i m = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(p, p));
      return _mm256_zextsi128_si256(_mm_madd_epi16(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v))));
    }
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
    static i32 sub(i32 a, i32 b) { return _mm512_sub_epi32(a, b); }
    static i32 zero() { return _mm512_setzero_si512(); }
    // The 32-element block formats, two blocks per register (block b low, b + 1 high).
    static bytes splat8(int k) { return _mm512_set1_epi8(static_cast<char>(k)); }
    static bytes flip_sign_bit(bytes b) { return _mm512_xor_si512(b, _mm512_set1_epi8(static_cast<char>(0x80))); }
    // The exact sums of 8 blocks' lanes, block 2p in v[p]'s low half and 2p + 1 in its high half,
    // in block order: the 128-bit quarters' sums of the four vectors side by side (two unpack
    // levels), the two quarters of each half added, then the halves interleaved.
    static __m256i pair_sums4(const i32* v) {
      const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
      const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
      const __m512i q = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
      // Quarter j of q: lane p holds v[p]'s quarter j; quarters 0 + 1 are blocks 2p, 2 + 3 blocks 2p + 1.
      const __m512i h = _mm512_add_epi32(q, _mm512_shuffle_i32x4(q, q, _MM_SHUFFLE(2, 3, 0, 1)));
      const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0);
      return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, h));
    }
    static i32 dot_u8s8(bytes u, bytes s) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s); }
    static i32 dot_u8s8_add(i32 acc, bytes u, bytes s) { return _mm512_dpbusd_epi32(acc, u, s); }
    // IAvx2::expand16 of p's 16 bytes (low half) and q's (high half).
    static bytes expand16x2(const uint8_t* p, const uint8_t* q) {
      const __m256i pq = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), 1);
      const __m512i ppqq = _mm512_shuffle_i64x2(_mm512_castsi256_si512(pq), _mm512_castsi256_si512(pq), 0x50);
      const __m512i shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
      return _mm512_and_si512(_mm512_srlv_epi64(ppqq, shift), _mm512_set1_epi8(0x0f));
    }
    // IVnni::with_bits32 of the little-endian 32-bit masks at p (low half) and q (high half).
    static bytes with_bits2(bytes b, const uint8_t* p, const uint8_t* q) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, q, 4);
      const __mmask64 m = _kunpackd_mask64(_cvtu32_mask32(hi), _cvtu32_mask32(lo));
      return _mm512_mask_add_epi8(b, m, b, _mm512_set1_epi8(16));
    }
    // The f16 values at p and q converted at once (IAvx2::f16 of each).
    static void f16_2(const void* p, const void* q, float& a, float& b) {
      uint16_t u, v;
      std::memcpy(&u, p, 2);
      std::memcpy(&v, q, 2);
      const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(u | (static_cast<uint32_t>(v) << 16))));
      a = _mm_cvtss_f32(f);
      b = _mm_cvtss_f32(_mm_movehdup_ps(f));
    }
    static void store(void* p, bytes v) { _mm512_storeu_si512(p, v); }
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
#include "kernels/cpu/q4k_x16_vnni.h"
#include "kernels/cpu/q4k_x16_amx.h"
#include "kernels/cpu/q6k_x16_vnni.h"
#include "kernels/cpu/q6k_x16_amx.h"
#include "kernels/cpu/q32_x16_vnni.h"

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
