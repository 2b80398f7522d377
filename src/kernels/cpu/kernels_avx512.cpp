// AVX-512 kernels (16 f32 lanes). Compiled for that target by the pragma below, not by a global
// -march, so the rest of the binary still runs on older CPUs; used only when best_isa() says the
// CPU has AVX-512 F/BW/VL/DQ (+ FMA, F16C).
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
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
// GCC 12's own AVX-512 intrinsics trip -Wmaybe-uninitialized on their _mm512_undefined_*()
// pass-through operands (GCC bug 105593); the warning is about the header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same bug, where the operand is inlined

#include "kernels/cpu/vec_avx512.h"

#include "kernels/cpu/int8_avx2.h"
#include "kernels/cpu/int8_avx512.h"
#include "kernels/cpu/kernels_impl.h"

namespace folio::kernels::detail {
namespace {
constexpr KernelTable kAvx512Table = make_table<VAvx512, IAvx2, GAvx512>();
}  // namespace
}  // namespace folio::kernels::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace folio::kernels::detail {
// AVX-512 VNNI machines get the table whose integer dot products use vpdpbusd (kernels_avx512_vnni.cpp).
const KernelTable& avx512_table() {
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni ? avx512_vnni_table() : kAvx512Table;
}
const KernelTable& avx512_plain_table() { return kAvx512Table; }
}  // namespace folio::kernels::detail
