// The normalised Walsh-Hadamard transform: its own inverse, orthogonal (dot products kept), and
// refused by the KV layout for a head_dim that is not a power of two.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/hadamard.h"
#include "kv/kv_layout.h"

namespace folio {
namespace {

TEST(Hadamard, IsItsOwnInverseAndKeepsDotProducts) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (int64_t d : {1, 2, 8, 32, 128}) {
    std::vector<float> q(static_cast<size_t>(2 * d)), k(q.size());
    for (auto& x : q) x = nd(rng);
    for (auto& x : k) x = nd(rng) * 10;
    k[0] = 300;  // an outlier channel
    const std::vector<float> q0 = q, k0 = k;
    kernels::hadamard_rows(q.data(), 2, d);
    kernels::hadamard_rows(k.data(), 2, d);
    double dot0 = 0, dot = 0, max_after = 0;
    for (int64_t c = 0; c < d; ++c) {
      dot0 += double(q0[c]) * k0[c];
      dot += double(q[c]) * k[c];
      max_after = std::max(max_after, std::fabs(double(k[c])));
    }
    EXPECT_NEAR(dot, dot0, 1e-4 * (1 + std::fabs(dot0))) << d;
    if (d >= 32) {
      EXPECT_LT(max_after, 150) << "the outlier is spread over the channels";
    }
    kernels::hadamard_rows(q.data(), 2, d);
    for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], q0[i], 1e-5f * (1 + std::fabs(q0[i]))) << d;
  }
}

TEST(Hadamard, RotatedKVNeedsAPowerOfTwoHeadDim) {
  KVTypes t = KVTypes::uniform(KVDType::Q8);
  t.rotated = true;
  EXPECT_NO_THROW(KVLayout(2, 2, 32, t));
  EXPECT_THROW(KVLayout(2, 2, 24, t), Error);
  EXPECT_EQ(t.name(), "q8+rotated");
}

}  // namespace
}  // namespace folio
