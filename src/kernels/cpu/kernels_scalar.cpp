// Portable kernels for CPUs without AVX2/FMA/F16C (plain x86-64 or anything else GCC targets).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels::detail {
namespace {

struct VScalar {
  using reg = float;
  static constexpr int W = 1;
  // Scalar code has 16 xmm registers too; R*G accumulators stay within them.
  static constexpr int kRows[5] = {0, 4, 4, 2, 2};
  static reg zero() { return 0.0f; }
  static reg set1(float v) { return v; }
  static reg load(const float* p) { return *p; }
  static reg load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static reg load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
  static reg load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static void store(float* p, reg v) { *p = v; }
  static reg fma(reg a, reg b, reg c) { return a * b + c; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg add(reg a, reg b) { return a + b; }
  static float hsum(reg v) { return v; }
  static float f16(uint16_t h) { return f16_to_f32(h); }
  static reg exp(reg x) { return std::exp(x); }
};

}  // namespace
}  // namespace folio::kernels::detail

#include "kernels/cpu/kernels_impl.h"

namespace folio::kernels::detail {

namespace {
constexpr KernelTable kScalarTable = make_table<VScalar>();
}  // namespace

const KernelTable& scalar_table() { return kScalarTable; }

}  // namespace folio::kernels::detail
