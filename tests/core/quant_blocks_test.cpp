#include "core/quant_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace folio {
namespace {

std::vector<float> decode(DType t, const void* blocks, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  convert_to_f32(t, blocks, out.data(), n);
  return out;
}

// Blocks written byte by byte from llama.cpp's layouts (not with folio's quantisers), and values
// worked out by hand from the format description.
TEST(QuantBlocks, Q4_0MatchesAHandWrittenBlock) {
  BlockQ4_0 b{};
  b.d = 0x3800;  // 0.5
  for (auto& q : b.qs) q = 0x88;  // every code 8: value 0
  b.qs[0] = 0x9A;                 // element 0: (10 - 8) * 0.5, element 16: (9 - 8) * 0.5
  b.qs[15] = 0x0F;                // element 15: (15 - 8) * 0.5, element 31: (0 - 8) * 0.5
  const std::vector<float> v = decode(DType::Q4_0, &b, 32);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[16], 0.5f);
  EXPECT_EQ(v[15], 3.5f);
  EXPECT_EQ(v[31], -4.0f);
  EXPECT_EQ(v[7], 0.0f);
}

TEST(QuantBlocks, Q5_0TakesItsFifthBitsFromQh) {
  BlockQ5_0 b{};
  b.d = 0x3C00;  // 1.0
  for (auto& q : b.qs) q = 0;
  b.qs[2] = 0x3F;            // element 2: low bits 15; element 18: low bits 3
  const uint32_t qh = (1u << 2) | (1u << 17);  // element 2 gains 16, element 17 too (18 does not)
  std::memcpy(b.qh, &qh, 4);
  const std::vector<float> v = decode(DType::Q5_0, &b, 32);
  EXPECT_EQ(v[2], 15.0f);    // 31 - 16
  EXPECT_EQ(v[18], -13.0f);  // 3 - 16
  EXPECT_EQ(v[17], 0.0f);    // 16 - 16
  EXPECT_EQ(v[0], -16.0f);
}

TEST(QuantBlocks, Q5_1AddsItsMinimumToUnsignedCodes) {
  BlockQ5_1 b{};
  b.d = 0x3800;  // 0.5
  b.m = 0xC000;  // -2.0
  for (auto& q : b.qs) q = 0;
  b.qs[2] = 0x3F;                                 // element 2: low bits 15; element 18: low bits 3
  const uint32_t qh = (1u << 2) | (1u << 17);     // element 2 gains 16, element 17 too
  std::memcpy(b.qh, &qh, 4);
  const std::vector<float> v = decode(DType::Q5_1, &b, 32);
  EXPECT_EQ(v[2], 0.5f * 31 - 2.0f);
  EXPECT_EQ(v[18], 0.5f * 3 - 2.0f);
  EXPECT_EQ(v[17], 0.5f * 16 - 2.0f);
  EXPECT_EQ(v[0], -2.0f);
}

// Scales 1..7, 63 and mins 0..6, 33 for the 8 sub-blocks, packed as ggml packs them.
void write_k4_scales(uint8_t s[12]) {
  const uint8_t bytes[12] = {1, 2, 3, 4 | (3 << 6), 0, 1, 2, 3 | (2 << 6), 0x45, 0x56, 0x67, 0x1F};
  std::memcpy(s, bytes, 12);
}

TEST(QuantBlocks, Q4_KMatchesAHandWrittenBlock) {
  BlockQ4K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  write_k4_scales(b.scales);
  b.qs[0] = 0x21;       // sub-block 0 element 0: q 1; sub-block 1 element 0: q 2
  b.qs[3 * 32 + 5] = 0x7C;  // sub-block 6 element 5: q 12; sub-block 7 element 5: q 7
  const std::vector<float> v = decode(DType::Q4_K, &b, 256);
  EXPECT_EQ(v[0], 1.0f);                    // 1 * 1 * 1 - 0.5 * 0
  EXPECT_EQ(v[32], 3.5f);                   // 1 * 2 * 2 - 0.5 * 1
  EXPECT_EQ(v[6 * 32 + 5], 81.0f);          // 1 * 7 * 12 - 0.5 * 6
  EXPECT_EQ(v[7 * 32 + 5], 424.5f);         // 1 * 63 * 7 - 0.5 * 33
  EXPECT_EQ(v[7 * 32 + 6], -16.5f);         // q 0: just the min
  uint8_t sc, m;
  scale_min_k4(7, b.scales, &sc, &m);
  EXPECT_EQ(sc, 63);
  EXPECT_EQ(m, 33);
  // The word-wise unpacking agrees with the per-sub-block one on every byte pattern tried.
  for (uint32_t seed = 0; seed < 200; ++seed) {
    uint8_t s[12], all_sc[8], all_m[8];
    for (int i = 0; i < 12; ++i) s[i] = static_cast<uint8_t>((seed * 2654435761u) >> (i * 2 % 24)) ^ static_cast<uint8_t>(i * 37 + seed);
    scales_mins_k4(s, all_sc, all_m);
    for (int j = 0; j < 8; ++j) {
      scale_min_k4(j, s, &sc, &m);
      ASSERT_EQ(all_sc[j], sc) << seed << " " << j;
      ASSERT_EQ(all_m[j], m) << seed << " " << j;
    }
  }
}

TEST(QuantBlocks, Q5_KAddsTheFifthBitOfItsSubBlock) {
  BlockQ5K b{};
  b.d = 0x3C00;
  b.dmin = 0x3800;
  write_k4_scales(b.scales);
  b.qs[3 * 32 + 5] = 0x7C;
  b.qh[5] = 1 << 6;  // bit 6: sub-block 6's element 5 gains 16; sub-block 7's (bit 7) does not
  const std::vector<float> v = decode(DType::Q5_K, &b, 256);
  EXPECT_EQ(v[6 * 32 + 5], 193.0f);   // 1 * 7 * (12 + 16) - 3
  EXPECT_EQ(v[7 * 32 + 5], 424.5f);   // 1 * 63 * 7 - 16.5
}

TEST(QuantBlocks, Q6_KMatchesAHandWrittenBlock) {
  BlockQ6K b{};
  b.d = 0x3800;  // 0.5
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(g - 8);
  b.ql[3] = 0x05;   // element 3 (half 0, quarter 0): low bits 5; element 67 (quarter 2): 0
  b.qh[3] = 0x03;   // element 3's high bits 3 (q 53); quarters 1-3 of l = 3 get 0
  b.ql[67] = 0xB0;  // element 195 (half 1, quarter 2, l 3): low bits 11
  b.qh[35] = 0x20;  // its high bits 2: q 43
  const std::vector<float> v = decode(DType::Q6_K, &b, 256);
  EXPECT_EQ(v[3], -84.0f);   // 0.5 * (0 - 8) * (53 - 32)
  EXPECT_EQ(v[35], 96.0f);   // q 0, group 2: 0.5 * -6 * -32
  EXPECT_EQ(v[67], 64.0f);   // q 0, group 4: 0.5 * -4 * -32
  EXPECT_EQ(v[195], 22.0f);  // group 12: 0.5 * 4 * (43 - 32)
}

double rms_error(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
  convert_from_f32(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  const std::vector<float> y = decode(t, q.data(), static_cast<int64_t>(x.size()));
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (y[i] - x[i]) * (y[i] - x[i]);
    s += x[i] * x[i];
  }
  return std::sqrt(e / s);
}

// Each quantiser writes blocks its own dequantiser reads back within the error its bits allow:
// a layout mismatch between the two scatters values and gives errors of the order of the signal.
TEST(QuantBlocks, EveryFormatRoundTripsWithinItsPrecision) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(256 * 64);
  for (auto& v : x) v = nd(rng);
  const double q8 = rms_error(DType::Q8_0, x), q4 = rms_error(DType::Q4_0, x), q5 = rms_error(DType::Q5_0, x),
               q51 = rms_error(DType::Q5_1, x), q4k = rms_error(DType::Q4_K, x),
               q5k = rms_error(DType::Q5_K, x), q6k = rms_error(DType::Q6_K, x);
  EXPECT_LT(q8, 0.01);
  EXPECT_LT(q6k, 0.03);
  EXPECT_LT(q5k, 0.06);
  EXPECT_LT(q4k, 0.12);
  EXPECT_LT(q4, 0.15);
  EXPECT_LT(q5, q4);
  EXPECT_LT(q51, q4);
  EXPECT_GT(q51, q8);
  EXPECT_LT(q6k, q5k);
  EXPECT_LT(q5k, q4k);
  EXPECT_GT(q4k, 0.01);  // 4 bits cannot be this good: the data really went through the codes
}

TEST(QuantBlocks, ActivationBlocksKeepTheirSums) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.f;
  x[300] = -9.f;  // the largest magnitude of the second block, negative
  std::vector<ActQ8K> a(2);
  quantize_act_q8k(x.data(), a.data(), 512);
  for (int b = 0; b < 2; ++b) {
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += a[b].q[16 * g + i];
      EXPECT_EQ(a[b].bsums[g], s);
    }
    for (int i = 0; i < 256; ++i) EXPECT_NEAR(a[b].d * a[b].q[i], x[256 * b + i], std::fabs(a[b].d) * 0.5f + 1e-6f);
  }
  // As llama.cpp's q8_K: the extreme always becomes -127 and d carries its sign.
  EXPECT_EQ(a[1].q[300 - 256], -127);
  EXPECT_GT(a[1].d, 0.f);
  std::vector<ActQ8> a8(16);
  quantize_act_q8(x.data(), a8.data(), 512);
  // d is rounded through f16 after the codes were chosen: up to 127 codes of its rounding error more.
  for (int i = 0; i < 512; ++i)
    EXPECT_NEAR(a8[i / 32].d * a8[i / 32].q[i % 32], x[i], a8[i / 32].d * (0.5f + 127.f / 1024.f));
}

TEST(QuantBlocks, NamesAndSizes) {
  for (const char* name : {"q4_0", "q5_0", "q4_k", "q5_k", "q6_k", "Q4_K"}) EXPECT_TRUE(parse_dtype(name).has_value()) << name;
  EXPECT_EQ(dtype_row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(dtype_row_bytes(DType::Q5_K, 256), 176u);
  EXPECT_EQ(dtype_row_bytes(DType::Q6_K, 256), 210u);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_THROW(dtype_row_bytes(DType::Q4_K, 128), Error);
}

}  // namespace
}  // namespace folio
