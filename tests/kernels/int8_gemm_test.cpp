// kernels::gemm_int8 against exact sums computed here in int64 (an independent loop over the
// unpacked codes), on every ISA table this CPU can run; plus the quantisers' bounds and bad input.
#include "kernels/cpu/int8_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "kernels/cpu/kernel_table.h"
#include "kernel_test_util.h"

namespace folio::kernels {
namespace {

using testing::IsaGuard;
using testing::random_floats;
using testing::supported_isas;

// The code of weight (o, k), read back from the panel layout the header documents.
int8_t code_at(const Int8Weights& w, int64_t o, int64_t k) {
  return w.panels[static_cast<size_t>((o / 16) * 16 * w.in + (k / 4) * 64 + (o % 16) * 4 + k % 4)];
}

std::vector<uint8_t> random_codes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 127);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

// y as the header defines it, sums in int64.
std::vector<float> reference(const std::vector<uint8_t>& a, int64_t n, float a_scale, const Int8Weights& w,
                             const float* bias) {
  std::vector<float> y(static_cast<size_t>(n * w.out));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < w.out; ++o) {
      int64_t s = 0;
      for (int64_t k = 0; k < w.in; ++k) s += int64_t{a[static_cast<size_t>(r * w.in + k)]} * code_at(w, o, k);
      const float scale = a_scale * w.scales[static_cast<size_t>(o)];
      y[static_cast<size_t>(r * w.out + o)] = static_cast<float>(s) * scale + (bias ? bias[o] : 0.0f);
    }
  return y;
}

TEST(Int8Gemm, EveryIsaGivesTheExactSumsForAnyShape) {
  IsaGuard guard;
  const int64_t outs[] = {1, 16, 17, 48, 170, 256};
  const int64_t ins[] = {4, 144, 868};
  const int64_t ns[] = {1, 5, 64, 65, 131};
  uint32_t seed = 1;
  for (int64_t out : outs)
    for (int64_t in : ins)
      for (int64_t n : ns) {
        const std::vector<float> wf = random_floats(out * in, seed++);
        const Int8Weights w = Int8Weights::quantize(wf.data(), out, in);
        const std::vector<uint8_t> a = random_codes(n * in, seed++);
        const std::vector<float> bias = random_floats(out, seed++);
        const std::vector<float> want = reference(a, n, 0.031f, w, bias.data());
        for (Isa isa : supported_isas()) {
          set_isa(isa);
          std::vector<float> y(want.size(), -1.0f);
          gemm_int8(a.data(), n, 0.031f, w, bias.data(), y.data());
          ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
              << isa_name(isa) << " out " << out << " in " << in << " n " << n;
        }
      }
}

// The largest sums the codes allow (127 x +-127 everywhere): AVX2's pairwise 16-bit sums would
// saturate with 8-bit activations; with 7 bits every table must still agree with int64.
TEST(Int8Gemm, ExtremeCodesDoNotSaturateOnAnyTable) {
  const int64_t out = 32, in = 512, n = 7;
  std::vector<float> wf(static_cast<size_t>(out * in));
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = (i / in) % 2 ? -1.0f : 1.0f;
  const Int8Weights w = Int8Weights::quantize(wf.data(), out, in);
  const std::vector<uint8_t> a(static_cast<size_t>(n * in), 127);
  std::vector<const detail::KernelTable*> tables{&detail::scalar_table()};
  if (best_isa() >= Isa::Avx2) tables.push_back(&detail::avx2_table());
  if (best_isa() >= Isa::Avx512) tables.push_back(&detail::avx512_plain_table());
  if (best_isa() >= Isa::Avx512 && __builtin_cpu_supports("avx512vnni")) tables.push_back(&detail::avx512_vnni_table());
  for (const detail::KernelTable* t : tables) {
    std::vector<int32_t> c(static_cast<size_t>(n * w.panel_count() * 16));
    const int64_t at_start[] = {0};
    t->gemm_int8_sums(a.data(), n, in, at_start, 1, in, w.panels.data(), w.panel_count(), c.data());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < out; ++o)
        ASSERT_EQ(c[static_cast<size_t>(r * w.panel_count() * 16 + o)], (o % 2 ? -1 : 1) * 127 * 127 * in)
            << "table " << (t - tables[0]) << " row " << r << " out " << o;
  }
}

// A 3x3 convolution read through taps from its zero-padded input equals the same product over an
// explicit im2col copy, bit for bit, on every ISA; taps that do not split the inputs are refused.
TEST(Int8Gemm, TapsReadAPaddedMapAsIm2colDoes) {
  IsaGuard guard;
  const int64_t H = 3, W = 13, C = 12, O = 20, Wp = W + 2;
  const std::vector<uint8_t> padded_raw = random_codes((H + 2) * Wp * C, 11);
  std::vector<uint8_t> padded(padded_raw.size(), 0);  // zero border, random interior
  for (int64_t y = 1; y <= H; ++y)
    for (int64_t x = 1; x <= W; ++x)
      for (int64_t c = 0; c < C; ++c) padded[static_cast<size_t>((y * Wp + x) * C + c)] = padded_raw[static_cast<size_t>((y * Wp + x) * C + c)];
  std::vector<uint8_t> cols;  // [H * W, 9 * C], taps (ky, kx) major
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx)
          for (int64_t c = 0; c < C; ++c) cols.push_back(padded[static_cast<size_t>(((y + ky) * Wp + x + kx) * C + c)]);
  const std::vector<float> wf = random_floats(O * 9 * C, 12);
  const Int8Weights w = Int8Weights::quantize(wf.data(), O, 9 * C);
  std::vector<int64_t> taps;
  for (int64_t ky = 0; ky < 3; ++ky)
    for (int64_t kx = 0; kx < 3; ++kx) taps.push_back((ky * Wp + kx) * C);
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    std::vector<float> want(static_cast<size_t>(H * W * O)), got(want.size());
    gemm_int8(cols.data(), H * W, 0.5f, w, nullptr, want.data());
    for (int64_t y = 0; y < H; ++y)
      gemm_int8_taps(padded.data() + y * Wp * C, W, C, taps, 0.5f, w, nullptr, got.data() + y * W * O);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << isa_name(isa);
  }
  std::vector<float> y(static_cast<size_t>(O));
  const int64_t five[] = {0, 1, 2, 3, 4};
  EXPECT_THROW(gemm_int8_taps(padded.data(), 1, C, five, 1.0f, w, nullptr, y.data()), Error);
}

TEST(Int8Gemm, QuantisersStayWithinHalfAStep) {
  const std::vector<float> wf = random_floats(40 * 64, 7);
  const Int8Weights w = Int8Weights::quantize(wf.data(), 40, 64);
  for (int64_t o = 0; o < 40; ++o)
    for (int64_t k = 0; k < 64; ++k) {
      const float s = w.scales[static_cast<size_t>(o)];
      EXPECT_LE(std::fabs(code_at(w, o, k) * s - wf[static_cast<size_t>(o * 64 + k)]), 0.5f * s * 1.0001f);
    }
  std::vector<float> x = random_floats(300, 8);
  std::vector<uint8_t> q(x.size());
  const float scale = quantize_u7(x.data(), static_cast<int64_t>(x.size()), q.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(q[i], 127);
    EXPECT_LE(std::fabs(q[i] * scale - std::max(x[i], 0.0f)), 0.5f * scale * 1.0001f);
  }
  std::vector<float> zeros(10, -1.0f);
  EXPECT_EQ(quantize_u7(zeros.data(), 10, q.data()), 1.0f);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(q[static_cast<size_t>(i)], 0);
}

// Values on the rounding boundaries (k + 0.5 steps), negatives, zeros and a tail shorter than a
// vector: every ISA gives the same codes and scale.
TEST(Int8Gemm, QuantiserGivesTheSameCodesOnEveryIsa) {
  IsaGuard guard;
  std::vector<float> x = random_floats(1000 + 13, 21);
  for (size_t i = 0; i < 300; ++i) x[i] = 0.5f * static_cast<float>(i % 255);  // max 127: halves exact
  x[400] = -0.0f, x[401] = 0.0f, x[402] = -3.0f;
  for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{300}, static_cast<int64_t>(x.size())}) {
    set_isa(Isa::Scalar);
    std::vector<uint8_t> want(static_cast<size_t>(n));
    const float want_scale = quantize_u7(x.data(), n, want.data());
    for (Isa isa : supported_isas()) {
      set_isa(isa);
      std::vector<uint8_t> got(static_cast<size_t>(n), 255);
      EXPECT_EQ(quantize_u7(x.data(), n, got.data()), want_scale) << isa_name(isa) << " n " << n;
      EXPECT_EQ(got, want) << isa_name(isa) << " n " << n;
    }
  }
}

TEST(Int8Gemm, RejectsInputWidthsThatAreNotMultiplesOfFour) {
  const std::vector<float> wf(3 * 6, 1.0f);
  try {
    Int8Weights::quantize(wf.data(), 3, 6);
    FAIL() << "expected InvalidInput";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("multiple of 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace folio::kernels
