// The bf16 GEMM (bf16_gemm.h) and the paths that use it (matmul and dense_attention with
// GemmPrecision::Bf16). Oracle: the same products written out in double from the inputs rounded to
// bf16 by core/dtype.h's f32_to_bf16 (round to nearest even), so the only difference left is the
// kernel's f32 summation; the bound is checked to catch a kernel that does not round (or rounds the
// wrong elements). Skipped on CPUs without AVX512-BF16, where the kernel cannot run and the
// precision falls back to f32 (that fallback is tested everywhere).
#include "kernels/cpu/bf16_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/dense_attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernel_test_util.h"

namespace folio::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;
using testing::StoredWeight;

#define REQUIRE_BF16()                                                             \
  if (!bf16_gemm_supported()) GTEST_SKIP() << "this CPU has no AVX512-BF16";

float round_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

// Y[i, c] = sum_k bf16(x[i, k]) * bf16(w[c, k]) in double; `scale[i, c]` = sum_k |x| |w| (the size
// of the terms, which bounds an f32 summation's error).
void rounded_reference(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t out, int64_t in,
                       std::vector<double>& y, std::vector<double>& scale) {
  y.assign(static_cast<size_t>(n * out), 0.0);
  scale.assign(y.size(), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < out; ++c)
      for (int64_t k = 0; k < in; ++k) {
        const double p = static_cast<double>(round_bf16(x[i * in + k])) * round_bf16(w[c * in + k]);
        y[i * out + c] += p;
        scale[i * out + c] += std::fabs(p);
      }
}

// Largest |y - ref| / (scale + tiny) over all outputs.
double worst_relative(const std::vector<float>& y, const std::vector<double>& ref, const std::vector<double>& scale) {
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]) / (scale[i] + 1e-30));
  return worst;
}

// x [n, in] times the packed weight w [out, in], through Bf16Activations, pack_bf16_weights and bf16_gemm.
std::vector<float> packed_product(const std::vector<float>& x, const StoredWeight& w, int64_t n, int64_t out, int64_t in,
                                  ThreadPool& pool) {
  std::vector<float> y(static_cast<size_t>(n * out), -1.0f);
  const Bf16Activations xb(x.data(), n, in, pool);
  std::vector<uint32_t> packed;
  pack_bf16_weights(w.view, 0, out, packed);
  bf16_gemm(xb, packed.data(), out, y.data(), out);
  return y;
}

// f32 sums of `in` terms: a few units of 2^-24 times sqrt(in) or so; 1e-5 of the terms' magnitude
// leaves room, and a kernel that skipped the rounding of x or w would be off by ~2^-9 of it.
constexpr double kSumBound = 1e-5;

TEST(Bf16Gemm, MatchesRoundedProductsForEveryWeightDtypeAndEdge) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  // Shapes cross the 14-row and 32-column panel edges, an odd width, and widths past 32 (vector tails).
  const int64_t shapes[][3] = {{1, 1, 1}, {13, 31, 33}, {14, 32, 64}, {29, 65, 130}, {15, 33, 7}, {40, 70, 768}};
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (const auto& s : shapes) {
      const int64_t n = s[0], out = s[1], in = s[2];
      const std::vector<float> x = random_floats(n * in, 7);
      const StoredWeight w = make_weight(t, out, in, 8);
      const std::vector<float> y = packed_product(x, w, n, out, in, pool);
      std::vector<double> ref, scale;
      rounded_reference(x, w.decoded, n, out, in, ref, scale);
      EXPECT_LT(worst_relative(y, ref, scale), kSumBound) << dtype_name(t) << " " << n << "x" << out << "x" << in;
      if (t == DType::F32 && in >= 64) {
        // The bound discriminates: exact f32 products differ from the rounded ones by far more.
        std::vector<float> exact(y.size());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < out; ++c) {
            double acc = 0;
            for (int64_t k = 0; k < in; ++k) acc += static_cast<double>(x[i * in + k]) * w.decoded[c * in + k];
            exact[i * out + c] = static_cast<float>(acc);
          }
        EXPECT_GT(worst_relative(exact, ref, scale), 10 * kSumBound);
      }
    }
  }
}

// Where the CPU has AMX-BF16 and the kernel grants the tile state, the products run on tiles
// (bf16_amx_active()); set_bf16_amx(false) keeps the AVX-512 kernel. Both meet the rounded
// products' bound on shapes across the tiles' 32-row, 32-column and 16-pair edges, with and
// without a bias, and each is the same bits from one call to the next.
TEST(Bf16Gemm, AmxAndAvx512KernelsBothMeetTheBound) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  struct Reset {
    ~Reset() { set_bf16_amx(true); }
  } reset;
  for (bool amx : {true, false}) {
    set_bf16_amx(amx);
    EXPECT_EQ(bf16_amx_active(), amx && bf16_amx_supported());
    for (const auto& s : {std::array<int64_t, 3>{33, 47, 40}, {64, 64, 32}, {5, 100, 770}}) {
      const int64_t n = s[0], out = s[1], in = s[2];
      const std::vector<float> x = random_floats(n * in, 81), bias = random_floats(out, 82);
      const StoredWeight w = make_weight(DType::BF16, out, in, 83);
      std::vector<double> ref, scale;
      rounded_reference(x, w.decoded, n, out, in, ref, scale);
      const std::vector<float> y = packed_product(x, w, n, out, in, pool);
      EXPECT_LT(worst_relative(y, ref, scale), kSumBound) << (amx ? "amx " : "avx-512 ") << n << "x" << out << "x" << in;
      EXPECT_EQ(y, packed_product(x, w, n, out, in, pool));
      std::vector<float> biased(y.size());
      matmul(w.view, x.data(), n, biased.data(), pool, GemmPrecision::Bf16, bias.data());
      if (n < matmul_gemm_min_rows()) continue;  // the GEMV path: not this kernel
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < out; ++c) {
          ref[static_cast<size_t>(i * out + c)] += bias[static_cast<size_t>(c)];
          scale[static_cast<size_t>(i * out + c)] += std::fabs(bias[static_cast<size_t>(c)]);
        }
      EXPECT_LT(worst_relative(biased, ref, scale), kSumBound) << (amx ? "amx " : "avx-512 ") << "with a bias";
    }
  }
}

// Block-quantised weights are dequantised, then rounded to bf16 like float ones.
TEST(Bf16Gemm, BlockFormatsAreDequantisedThenRounded) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{13, 31, 256}, {29, 65, 512}};
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (const auto& s : shapes) {
      const int64_t n = s[0], out = s[1], in = s[2];
      const std::vector<float> x = random_floats(n * in, 17);
      const StoredWeight w = make_weight(t, out, in, 18);
      const std::vector<float> y = packed_product(x, w, n, out, in, pool);
      std::vector<double> ref, scale;
      rounded_reference(x, w.decoded, n, out, in, ref, scale);
      EXPECT_LT(worst_relative(y, ref, scale), kSumBound) << dtype_name(t) << " " << n << "x" << out << "x" << in;
    }
  }
}

TEST(Bf16Gemm, WeightRowsPackedFromAnOffsetAndStrides) {
  REQUIRE_BF16();
  ThreadPool pool(1);
  const int64_t n = 5, out = 40, in = 24;
  const std::vector<float> x = random_floats(n * in, 3);
  const StoredWeight w = make_weight(DType::F32, out, in, 4);
  // Rows 10..39 through the TensorView overload.
  std::vector<uint32_t> a, b;
  pack_bf16_weights(w.view, 10, 30, a);
  // The same rows as a transposed view (element (r, k) at src[r + k * out]).
  std::vector<float> wt(static_cast<size_t>(in * out));
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k) wt[k * out + r] = w.decoded[r * in + k];
  pack_bf16_weights(wt.data() + 10, 30, in, 1, out, b);
  EXPECT_EQ(a, b);
  std::vector<float> y(static_cast<size_t>(n * 30));
  const Bf16Activations xb(x.data(), n, in, pool);
  bf16_gemm(xb, a.data(), 30, y.data(), 30);
  std::vector<double> ref, scale;
  const std::vector<float> rows(w.decoded.begin() + 10 * in, w.decoded.end());
  rounded_reference(x, rows, n, 30, in, ref, scale);
  EXPECT_LT(worst_relative(y, ref, scale), kSumBound);
  // Activation rows `ld` apart pack like contiguous ones.
  std::vector<float> wide(static_cast<size_t>(n * 50), 99.0f);
  for (int64_t i = 0; i < n; ++i) std::copy_n(x.data() + i * in, in, wide.data() + i * 50);
  Bf16Activations strided;
  strided.assign(wide.data(), n, in, 50);
  std::vector<float> y2(y.size());
  bf16_gemm(strided, a.data(), 30, y2.data(), 30);
  EXPECT_EQ(y, y2);
}

// A transposed matrix packed by assign_transposed gives the bits of its explicit transpose packed by
// assign (odd widths and row counts past a panel included).
TEST(Bf16Gemm, TransposedActivationsPackLikeTheirTranspose) {
  REQUIRE_BF16();
  ThreadPool pool(1);
  for (const auto& [n, in] : {std::pair<int64_t, int64_t>{64, 4096}, {13, 7}, {29, 257}, {1, 1}}) {
    const int64_t ld = n + 5;  // x is [in, n] with rows ld apart
    const std::vector<float> x = random_floats(in * ld, 41);
    std::vector<float> xt(static_cast<size_t>(n * in));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < in; ++k) xt[static_cast<size_t>(i * in + k)] = x[static_cast<size_t>(k * ld + i)];
    Bf16Activations a, b;
    a.assign_transposed(x.data(), n, in, ld);
    b.assign(xt.data(), n, in, in);
    ASSERT_EQ(a.panels(), b.panels());
    EXPECT_TRUE(std::equal(a.panel(0), a.panel(0) + a.panels() * a.pairs() * kBf16PanelRows, b.panel(0)))
        << n << "x" << in;
  }
}

// A bias starts the bf16 GEMM's sums (the rounded products plus bias[c]); on the f32 paths it is
// added after the products, the bits of a separate addition.
TEST(Bf16Gemm, BiasIsTheFirstTermOfTheSums) {
  const int64_t n = 45, out = 70, in = 96;
  const std::vector<float> x = random_floats(n * in, 61), bias = random_floats(out, 62);
  const StoredWeight w = make_weight(DType::BF16, out, in, 63);
  ThreadPool pool(2);
  std::vector<float> plain(static_cast<size_t>(n * out)), biased(plain.size());
  matmul(w.view, x.data(), n, plain.data(), pool, GemmPrecision::F32);
  matmul(w.view, x.data(), n, biased.data(), pool, GemmPrecision::F32, bias.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < out; ++c) plain[static_cast<size_t>(i * out + c)] += bias[static_cast<size_t>(c)];
  EXPECT_EQ(plain, biased);
  REQUIRE_BF16();
  matmul(w.view, x.data(), n, biased.data(), pool, GemmPrecision::Bf16, bias.data());
  std::vector<double> ref, scale;
  rounded_reference(x, w.decoded, n, out, in, ref, scale);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < out; ++c) {
      ref[static_cast<size_t>(i * out + c)] += bias[static_cast<size_t>(c)];
      scale[static_cast<size_t>(i * out + c)] += std::fabs(bias[static_cast<size_t>(c)]);
    }
  EXPECT_LT(worst_relative(biased, ref, scale), kSumBound);
  // Without the bias the outputs are off by the bias itself: the bound sees it.
  std::vector<float> unbiased(biased.size());
  matmul(w.view, x.data(), n, unbiased.data(), pool, GemmPrecision::Bf16);
  EXPECT_GT(worst_relative(unbiased, ref, scale), 100 * kSumBound);
}

// The fused MLP (lin1's sums through bias and activation straight into lin2's packed input) gives
// the bits of linear, the activation, linear in bf16: hidden widths across the 32-column panels,
// odd, and rows across the 14-row panels.
TEST(Bf16Gemm, FusedMlpHasTheBitsOfItsSteps) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  struct Case { int64_t n, in, hidden, out; Activation act; };
  for (const Case c : {Case{45, 64, 96, 40, Activation::GeluErf}, Case{33, 96, 69, 50, Activation::QuickGelu},
                       Case{matmul_gemm_min_rows(), 32, 130, 17, Activation::GeluErf}}) {
    const std::vector<float> x = random_floats(c.n * c.in, 71), b1 = random_floats(c.hidden, 72), b2 = random_floats(c.out, 73);
    const StoredWeight w1 = make_weight(DType::BF16, c.hidden, c.in, 74), w2 = make_weight(DType::BF16, c.out, c.hidden, 75);
    std::vector<float> h(static_cast<size_t>(c.n * c.hidden)), steps(static_cast<size_t>(c.n * c.out)), fused(steps.size());
    linear(w1.view, b1.data(), x.data(), c.n, h.data(), pool, GemmPrecision::Bf16);
    if (c.act == Activation::GeluErf) gelu_erf_inplace(h.data(), c.n * c.hidden);
    else quick_gelu_inplace(h.data(), c.n * c.hidden);
    linear(w2.view, b2.data(), h.data(), c.n, steps.data(), pool, GemmPrecision::Bf16);
    MlpScratch scratch;
    mlp(w1.view, b1.data(), c.act, w2.view, b2.data(), x.data(), c.n, fused.data(), scratch, pool, GemmPrecision::Bf16);
    EXPECT_EQ(steps, fused) << "n=" << c.n << " hidden=" << c.hidden;
    EXPECT_EQ(scratch.f32.size(), 0u) << "the f32 hidden layer was used";
    // The other activation gives other bits: the epilogue applies the one asked for.
    const Activation other = c.act == Activation::GeluErf ? Activation::QuickGelu : Activation::GeluErf;
    mlp(w1.view, b1.data(), other, w2.view, b2.data(), x.data(), c.n, fused.data(), scratch, pool, GemmPrecision::Bf16);
    EXPECT_NE(steps, fused);
  }
}

TEST(Bf16Gemm, MatmulSameBitsForAnyPoolSizeAndBatch) {
  REQUIRE_BF16();
  const int64_t n = 45, out = 300, in = 96;
  const std::vector<float> x = random_floats(n * in, 11);
  const StoredWeight w = make_weight(DType::BF16, out, in, 12);
  ThreadPool p1(1), p2(2);
  std::vector<float> y1(static_cast<size_t>(n * out)), y2(y1.size()), part(static_cast<size_t>(25 * out));
  matmul(w.view, x.data(), n, y1.data(), p1, GemmPrecision::Bf16);
  matmul(w.view, x.data(), n, y2.data(), p2, GemmPrecision::Bf16);
  EXPECT_EQ(y1, y2);
  // Rows 20..44 alone give the same bits as within the whole batch.
  matmul(w.view, x.data() + 20 * in, 25, part.data(), p2, GemmPrecision::Bf16);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), y1.begin() + 20 * out));
  // And they are the bf16 products, not f32 ones.
  std::vector<float> f32(y1.size());
  matmul(w.view, x.data(), n, f32.data(), p2, GemmPrecision::F32);
  EXPECT_NE(y1, f32);
  EXPECT_TRUE(matmul_uses_bf16(w.view, GemmPrecision::Bf16));
}

TEST(Bf16Gemm, LargeBatchesOfEveryFormatTakeItAndSmallOnesTheGemv) {
  // Runs everywhere: Bf16 asks for bf16 products only where the CPU has them.
  const int64_t out = 64, in = 256;
  ThreadPool pool(2);
  for (DType t : {DType::Q8_0, DType::Q4_K, DType::F16}) {
    const StoredWeight w = make_weight(t, out, in, 5);
    EXPECT_EQ(matmul_uses_bf16(w.view, GemmPrecision::Bf16), bf16_gemm_supported()) << dtype_name(t);
    EXPECT_FALSE(matmul_uses_bf16(w.view, GemmPrecision::F32)) << dtype_name(t);
    for (int64_t n : {int64_t{2}, matmul_gemm_min_rows() + 3}) {
      const std::vector<float> x = random_floats(n * in, 9);
      std::vector<float> a(static_cast<size_t>(n * out)), b(a.size());
      matmul(w.view, x.data(), n, a.data(), pool, GemmPrecision::Bf16);
      matmul(w.view, x.data(), n, b.data(), pool, GemmPrecision::F32);
      // A decode-sized batch takes the GEMV whatever the precision; a large one the bf16 GEMM.
      if (n < matmul_gemm_min_rows() || !bf16_gemm_supported()) EXPECT_EQ(a, b) << dtype_name(t) << " n=" << n;
      else EXPECT_NE(a, b) << dtype_name(t) << " n=" << n;
    }
  }
  // matmul_many passes the precision to its large jobs, and keeps its small ones on the GEMV.
  const StoredWeight q = make_weight(DType::Q4_K, out, in, 6);
  const int64_t big = matmul_gemm_min_rows() + 3;
  const std::vector<float> x = random_floats(big * in, 10);
  std::vector<float> one(static_cast<size_t>(big * out)), many(one.size()), small_one(static_cast<size_t>(out)),
      small_many(static_cast<size_t>(out));
  matmul(q.view, x.data(), big, one.data(), pool, GemmPrecision::Bf16);
  matmul(q.view, x.data(), 1, small_one.data(), pool, GemmPrecision::F32);
  const MatmulJob jobs[] = {{&q.view, x.data(), big, many.data()}, {&q.view, x.data(), 1, small_many.data()}};
  matmul_many(jobs, pool, GemmPrecision::Bf16);
  EXPECT_EQ(one, many);
  EXPECT_EQ(small_one, small_many);
}

TEST(Bf16Gemm, PrecisionNames) {
  EXPECT_EQ(gemm_precision_from_name("f32", "--p"), GemmPrecision::F32);
  EXPECT_EQ(gemm_precision_from_name("auto", "--p"),
            bf16_gemm_supported() ? GemmPrecision::Bf16 : GemmPrecision::F32);
  if (bf16_gemm_supported()) EXPECT_EQ(gemm_precision_from_name("bf16", "--p"), GemmPrecision::Bf16);
  else EXPECT_THROW(gemm_precision_from_name("bf16", "--p"), Error);
  try {
    gemm_precision_from_name("fp16", "--encoder-precision");
    FAIL() << "fp16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--encoder-precision must be auto, f32 or bf16, got 'fp16'"), std::string::npos)
        << e.what();
  }
  EXPECT_STREQ(gemm_precision_name(GemmPrecision::Bf16), "bf16");
}

// Attention in bf16 against f32 attention: Q, K, V and the probabilities rounded to bf16 move each
// output by ~2^-9 of the values' size; the same bits for one and two threads; rel-pos terms kept.
TEST(Bf16Gemm, DenseAttentionCloseToF32AndThreadIndependent) {
  REQUIRE_BF16();
  const int64_t H = 2, d = 32, D = H * d, sh = 9, sw = 11, T = sh * sw, n_seq = 2;
  const std::vector<float> qkv = random_floats(n_seq * T * 3 * D, 31);
  const std::vector<float> th = random_floats((2 * sh - 1) * d, 32), tw = random_floats((2 * sw - 1) * d, 33);
  const RelPos2D rel{th.data(), tw.data(), sh, sw};
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  ThreadPool p1(1), p2(2);
  std::vector<float> f32(static_cast<size_t>(n_seq * T * D)), b1(f32.size()), b2(f32.size());
  dense_attention(qkv.data(), n_seq, T, H, d, scale, &rel, f32.data(), p2, GemmPrecision::F32);
  dense_attention(qkv.data(), n_seq, T, H, d, scale, &rel, b1.data(), p1, GemmPrecision::Bf16);
  dense_attention(qkv.data(), n_seq, T, H, d, scale, &rel, b2.data(), p2, GemmPrecision::Bf16);
  EXPECT_EQ(b1, b2);
  double num = 0, den = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    num += (b1[i] - f32[i]) * static_cast<double>(b1[i] - f32[i]);
    den += f32[i] * static_cast<double>(f32[i]);
  }
  const double rel_l2 = std::sqrt(num / den);
  EXPECT_LT(rel_l2, 2e-2);
  EXPECT_GT(rel_l2, 1e-5) << "bf16 products did not run";
  // Without the relative-position terms the outputs move by O(1): the bound above discriminates.
  std::vector<float> plain(f32.size());
  dense_attention(qkv.data(), n_seq, T, H, d, scale, nullptr, plain.data(), p2, GemmPrecision::Bf16);
  num = 0;
  for (size_t i = 0; i < f32.size(); ++i) num += (plain[i] - f32[i]) * static_cast<double>(plain[i] - f32[i]);
  EXPECT_GT(std::sqrt(num / den), 0.1);
}

// The bf16 attention against its own arithmetic written out in double: scores from Q and K rounded
// to bf16 (plus the relative-position terms, Q and the tables rounded too), probabilities exp(s - max) rounded to bf16
// unnormalised, times V rounded, over the exact sum of the probabilities. What is left is f32
// summation and the vector exp (a bf16 probability can round the other way): 3e-7 to 1.3e-5 relative
// L2 when written; a reference that does not round the probabilities is 5e-4 to 1.4e-3 away.
TEST(Bf16Gemm, DenseAttentionMatchesItsRoundedArithmetic) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  struct Case { int64_t T, H, d, sh; };  // sh = 0: no relative positions
  for (const Case c : {Case{257, 2, 64, 0}, Case{196, 3, 32, 14}, Case{70, 1, 16, 7}}) {
    const int64_t D = c.H * c.d, ld = 3 * D, sw = c.sh ? c.T / c.sh : 0;
    const std::vector<float> qkv = random_floats(c.T * ld, 51);
    const std::vector<float> th = random_floats(std::max<int64_t>(1, 2 * c.sh - 1) * c.d, 52),
                             tw = random_floats(std::max<int64_t>(1, 2 * sw - 1) * c.d, 53);
    const RelPos2D rel{th.data(), tw.data(), c.sh, sw};
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    std::vector<float> got(static_cast<size_t>(c.T * D));
    dense_attention(qkv.data(), 1, c.T, c.H, c.d, scale, c.sh ? &rel : nullptr, got.data(), pool, GemmPrecision::Bf16);
    double num = 0, den = 0;
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t q = 0; q < c.T; ++q) {
        const float* qv = qkv.data() + q * ld + h * c.d;
        std::vector<double> s(static_cast<size_t>(c.T));
        for (int64_t k = 0; k < c.T; ++k) {
          const float* kv = qkv.data() + k * ld + D + h * c.d;
          double dot = 0, bias = 0;
          for (int64_t i = 0; i < c.d; ++i) dot += static_cast<double>(round_bf16(qv[i])) * round_bf16(kv[i]);
          if (c.sh)
            for (int64_t i = 0; i < c.d; ++i)
              bias += static_cast<double>(round_bf16(qv[i])) * (round_bf16(th[(q / sw - k / sw + c.sh - 1) * c.d + i]) +
                                                                static_cast<double>(round_bf16(tw[(q % sw - k % sw + sw - 1) * c.d + i])));
          s[static_cast<size_t>(k)] = dot * scale + bias;
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        std::vector<double> o(static_cast<size_t>(c.d), 0.0);
        for (int64_t k = 0; k < c.T; ++k) {
          const double e = std::exp(s[static_cast<size_t>(k)] - mx);
          sum += e;
          const float* vv = qkv.data() + k * ld + 2 * D + h * c.d;
          for (int64_t i = 0; i < c.d; ++i) o[static_cast<size_t>(i)] += round_bf16(static_cast<float>(e)) * static_cast<double>(round_bf16(vv[i]));
        }
        for (int64_t i = 0; i < c.d; ++i) {
          const double ref = o[static_cast<size_t>(i)] / sum, y = got[static_cast<size_t>(q * D + h * c.d + i)];
          num += (y - ref) * (y - ref);
          den += ref * ref;
        }
      }
    EXPECT_LT(std::sqrt(num / den), 1e-4) << "T=" << c.T << " rel=" << c.sh;
  }
}

// qkv_attention stores the qkv map already rounded to bf16 where linear would take the bf16 GEMM;
// the attention rounds the f32 map to the same values as it packs it, so the outputs are the bits
// of linear and then dense_attention: SAM's windows (many sequences, relative positions), a global
// block, CLIP (no relative positions, an odd sequence), an odd input width; and with the GEMM
// path off (few rows), where both go through the f32 map.
TEST(Bf16Gemm, QkvAttentionGivesTheBitsOfLinearThenAttention) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  struct Case { int64_t n_seq, T, H, d, in, sh; };  // sh = 0: no relative positions
  const int64_t saved = matmul_gemm_min_rows();
  for (const int64_t min_rows : {int64_t{1}, std::numeric_limits<int64_t>::max()}) {
    set_matmul_gemm_min_rows(min_rows);
    for (const Case c : {Case{3, 49, 2, 32, 64, 7}, Case{1, 70, 3, 16, 48, 7}, Case{1, 17, 2, 32, 64, 0}, Case{2, 9, 1, 16, 33, 3}}) {
      const int64_t D = c.H * c.d, rows = c.n_seq * c.T, sw = c.sh ? c.T / c.sh : 0;
      const std::vector<float> x = random_floats(rows * c.in, 61), bias = random_floats(3 * D, 62);
      const StoredWeight w = make_weight(DType::BF16, 3 * D, c.in, 63);
      const std::vector<float> th = random_floats(std::max<int64_t>(1, 2 * c.sh - 1) * c.d, 64),
                               tw = random_floats(std::max<int64_t>(1, 2 * sw - 1) * c.d, 65);
      const RelPos2D rel{th.data(), tw.data(), c.sh, sw};
      const RelPos2D* r = c.sh ? &rel : nullptr;
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
      std::vector<float> qkv(static_cast<size_t>(rows * 3 * D)), want(static_cast<size_t>(rows * D)), got(want.size());
      linear(w.view, bias.data(), x.data(), rows, qkv.data(), pool, GemmPrecision::Bf16);
      dense_attention(qkv.data(), c.n_seq, c.T, c.H, c.d, scale, r, want.data(), pool, GemmPrecision::Bf16);
      std::fill(qkv.begin(), qkv.end(), std::numeric_limits<float>::quiet_NaN());
      qkv_attention(w.view, bias.data(), x.data(), c.n_seq, c.T, c.H, c.d, scale, r, qkv.data(), got.data(), pool,
                    GemmPrecision::Bf16);
      EXPECT_EQ(got, want) << "T=" << c.T << " in=" << c.in << " gemm from " << min_rows << " rows";
    }
  }
  set_matmul_gemm_min_rows(saved);
}

// LayerNorm'd, gathered rows (NormedRows) as a product's input give the bits of layer_norm, the
// gather and the product on f32 maps: packed as they are normalised on the bf16 GEMM, written out
// on the other paths (few rows); padding rows are zeros.
TEST(Bf16Gemm, NormedRowsGiveTheBitsOfLayerNormThenTheProduct) {
  REQUIRE_BF16();
  ThreadPool pool(2);
  const int64_t width = 48, tokens = 30, n = 36, H = 2, d = 24, hidden = 64;
  std::vector<float> x = random_floats(tokens * width, 71);
  for (float& v : x) v = 3.0f * v + 1.0f;
  const std::vector<float> g = random_floats(width, 72), b = random_floats(width, 73);
  std::vector<int64_t> map(static_cast<size_t>(n), -1);  // rows 6.. gather tokens backwards, 0..5 pad
  for (int64_t r = 6; r < n; ++r) map[static_cast<size_t>(r)] = tokens - 1 - (r - 6);
  const NormedRows in{x.data(), g.data(), b.data(), 1e-6f, width, map.data()};
  std::vector<float> normed(static_cast<size_t>(n * width), 0.0f);
  for (int64_t r = 0; r < n; ++r)
    if (map[static_cast<size_t>(r)] >= 0)
      layer_norm(x.data() + map[static_cast<size_t>(r)] * width, g.data(), b.data(), normed.data() + r * width, 1, width, 1e-6f);
  std::vector<float> written(normed.size(), 7.0f);
  in.write(n, written.data(), pool);
  EXPECT_EQ(written, normed);

  const StoredWeight w1 = make_weight(DType::BF16, hidden, width, 74), w2 = make_weight(DType::BF16, width, hidden, 75),
                     wq = make_weight(DType::BF16, 3 * H * d, width, 76);
  const std::vector<float> b1 = random_floats(hidden, 77), b2 = random_floats(width, 78), bq = random_floats(3 * H * d, 79);
  const int64_t saved = matmul_gemm_min_rows();
  for (const int64_t min_rows : {int64_t{1}, std::numeric_limits<int64_t>::max()}) {
    set_matmul_gemm_min_rows(min_rows);
    MlpScratch scratch;
    std::vector<float> want(normed.size()), got(normed.size());
    mlp(w1.view, b1.data(), Activation::GeluErf, w2.view, b2.data(), normed.data(), n, want.data(), scratch, pool,
        GemmPrecision::Bf16);
    mlp(w1.view, b1.data(), Activation::GeluErf, w2.view, b2.data(), in, n, got.data(), scratch, pool, GemmPrecision::Bf16);
    EXPECT_EQ(got, want) << "mlp, gemm from " << min_rows << " rows";
    std::vector<float> qkv(static_cast<size_t>(n * 3 * H * d)), att_want(static_cast<size_t>(n * H * d)), att_got(att_want.size());
    qkv_attention(wq.view, bq.data(), normed.data(), 4, 9, H, d, 0.2f, nullptr, qkv.data(), att_want.data(), pool,
                  GemmPrecision::Bf16);
    std::vector<float> out(static_cast<size_t>(n * width));  // room for the normalised rows on the f32 path
    qkv_attention(wq.view, bq.data(), in, 4, 9, H, d, 0.2f, nullptr, qkv.data(), out.data(), pool, GemmPrecision::Bf16);
    EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + n * H * d), att_want) << "attention, gemm from " << min_rows << " rows";
  }
  set_matmul_gemm_min_rows(saved);
}

}  // namespace
}  // namespace folio::kernels
