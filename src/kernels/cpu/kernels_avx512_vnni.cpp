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
