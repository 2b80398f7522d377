#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace folio {
namespace {

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly half-way between two bf16 values: ties go to the even mantissa (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7c00) == 0x7c00) continue;  // inf / nan
    EXPECT_EQ(f32_to_f16(f16_to_f32(v)), v) << std::hex << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds up to infinity
}

TEST(DType, Q8RoundTripWithinHalfAStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> x(64), y(64);
  for (auto& v : x) v = nd(rng);
  std::vector<BlockQ8_0> q(2);
  convert_from_f32(DType::Q8_0, x.data(), q.data(), 64);
  convert_to_f32(DType::Q8_0, q.data(), y.data(), 64);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    for (int j = 0; j < 32; ++j) EXPECT_NEAR(x[b * 32 + j], y[b * 32 + j], amax / 127 * 0.51f);
  }
}

TEST(DType, ParsesNames) {
  EXPECT_EQ(parse_dtype("BF16"), DType::BF16);
  EXPECT_EQ(parse_dtype("float32"), DType::F32);
  EXPECT_FALSE(parse_dtype("int3").has_value());
}

}  // namespace
}  // namespace folio
