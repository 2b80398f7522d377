// gelu_erf_inplace and quick_gelu_inplace on every instruction set against their definitions
// computed in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/nn_ops.h"
#include "kernel_test_util.h"

namespace folio::kernels {
namespace {

double exact_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// Runs `activation` in place on -12..12 in steps of 0.001 (every lane and tail) and on -90 and 90,
// on every ISA: its worst error against `exact`, relative to max(1, |x|), must stay below `bound`,
// and the ends must come out -0 and 90.
template <typename Activation, typename Exact>
void expect_close_on_every_isa(Activation activation, Exact exact, double bound) {
  std::vector<float> x;
  for (int i = -12000; i <= 12000; ++i) x.push_back(static_cast<float>(i) * 0.001f);
  x.push_back(-90.0f);
  x.push_back(90.0f);
  testing::IsaGuard guard;
  for (Isa isa : testing::supported_isas()) {
    set_isa(isa);
    std::vector<float> g = x;
    activation(g.data(), static_cast<int64_t>(g.size()));
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      worst = std::max(worst, std::fabs(g[i] - exact(v)) / std::max(1.0, std::fabs(v)));
    }
    EXPECT_LT(worst, bound) << isa_name(isa);
    EXPECT_EQ(g[g.size() - 2], -0.0f) << isa_name(isa);
    EXPECT_EQ(g.back(), 90.0f) << isa_name(isa);
  }
}

double quick_gelu(double x) { return x / (1.0 + std::exp(-1.702 * x)); }

// A tolerance of 2.5e-7: the vector erf's 1.5e-7 plus f32 rounding. The tanh form of GELU, which
// models trained with the exact one must not get, is 1e-4 or more away near |x| = 3, so the bound
// discriminates.
TEST(GeluErf, EveryIsaMatchesExactGelu) {
  expect_close_on_every_isa([](float* x, int64_t n) { gelu_erf_inplace(x, n); }, exact_gelu, 2.5e-7);
  const double tanh_form = 0.5 * 3.0 * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (3.0 + 0.044715 * 27.0)));
  EXPECT_GT(std::fabs(tanh_form - exact_gelu(3.0)), 1e-4);
}

// quick_gelu x sigmoid(1.702 x) within 1e-6 (the vector exp's few ulp); the exact GELU is 4.5e-3
// away at x = 1, so a swapped activation fails.
TEST(QuickGelu, EveryIsaMatchesItsDefinition) {
  expect_close_on_every_isa([](float* x, int64_t n) { quick_gelu_inplace(x, n); }, quick_gelu, 1e-6);
  EXPECT_GT(std::fabs(quick_gelu(1.0) - exact_gelu(1.0)), 1e-3);
}

}  // namespace
}  // namespace folio::kernels
