// The vision kernels (nn_ops, conv2d, dense_attention, resize) against plain double-precision
// implementations written from their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/dense_attention.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/resize.h"

namespace folio {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

float max_diff(const std::vector<float>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return static_cast<float>(m);
}

TEST(VisionKernels, LayerNormMatchesDefinition) {
  const int64_t rows = 5, n = 37;
  auto x = randn(rows * n, 1, 3.0f), w = randn(n, 2), b = randn(n, 3);
  for (auto& v : x) v += 10.0f;  // a large mean must not hurt the variance
  std::vector<float> y(x.size());
  kernels::layer_norm(x.data(), w.data(), b.data(), y.data(), rows, n, 1e-6f);
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += x[r * n + i];
    m /= n;
    for (int64_t i = 0; i < n; ++i) v += (x[r * n + i] - m) * (x[r * n + i] - m);
    v /= n;  // biased
    for (int64_t i = 0; i < n; ++i) ref[r * n + i] = (x[r * n + i] - m) / std::sqrt(v + 1e-6) * w[i] + b[i];
  }
  EXPECT_LT(max_diff(y, ref), 1e-5f);
  // in place
  kernels::layer_norm(x.data(), w.data(), b.data(), x.data(), rows, n, 1e-6f);
  EXPECT_EQ(x, y);
}

// LayerNorm is in the kernel tables; the vector ones must give the scalar one's bits (the mini-OCR
// models' answers must not depend on the CPU), at widths with and without a tail of eight.
TEST(VisionKernels, LayerNormGivesTheSameBitsOnEveryTable) {
  std::vector<const kernels::detail::KernelTable*> tables{&kernels::detail::scalar_table()};
  if (kernels::best_isa() >= kernels::Isa::Avx2) tables.push_back(&kernels::detail::avx2_table());
  if (kernels::best_isa() >= kernels::Isa::Avx512) tables.push_back(&kernels::detail::avx512_plain_table());
  for (const int64_t n : {1, 7, 8, 9, 37, 768, 1029}) {
    const int64_t rows = 6;
    auto x = randn(rows * n, 7, 4.0f);
    for (int64_t i = 0; i < n; ++i) x[i] += 1000.0f;  // a large mean: the double sums matter
    const auto w = randn(n, 8), b = randn(n, 9);
    std::vector<float> ref(x.size());
    tables[0]->layer_norm(x.data(), w.data(), b.data(), ref.data(), rows, n, 1e-6f);
    for (size_t t = 1; t < tables.size(); ++t) {
      std::vector<float> y(x.size(), -1.0f);
      tables[t]->layer_norm(x.data(), w.data(), b.data(), y.data(), rows, n, 1e-6f);
      EXPECT_EQ(y, ref) << "table " << t << ", width " << n;
    }
  }
}

TEST(VisionKernels, Activations) {
  std::vector<float> x = {-6.0f, -1.5f, -0.3f, 0.0f, 0.2f, 1.0f, 4.0f};
  std::vector<float> g = x, q = x;
  kernels::gelu_erf_inplace(g.data(), static_cast<int64_t>(g.size()));
  kernels::quick_gelu_inplace(q.data(), static_cast<int64_t>(q.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    EXPECT_NEAR(g[i], 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))), 1e-6) << v;
    EXPECT_NEAR(q[i], v / (1.0 + std::exp(-1.702 * v)), 1e-6) << v;
  }
  // exact GELU differs from the tanh form and from quick_gelu by more than the tolerance above
  EXPECT_GT(std::fabs(g[1] - q[1]), 1e-3f);
}

// The pool overloads split rows or elements over threads and give the serial functions' bits.
TEST(VisionKernels, RowOpsSplitOverThreadsKeepTheBits) {
  const int64_t rows = 37, n = 96;
  const auto x = randn(rows * n, 4, 2.0f), w = randn(n, 5), b = randn(n, 6);
  ThreadPool pool(2);
  std::vector<float> serial(x.size()), split(x.size());
  kernels::layer_norm(x.data(), w.data(), b.data(), serial.data(), rows, n, 1e-6f);
  kernels::layer_norm(x.data(), w.data(), b.data(), split.data(), rows, n, 1e-6f, pool);
  EXPECT_EQ(serial, split);
  std::vector<float> added = serial;
  kernels::add_inplace(serial.data(), x.data(), rows * n);
  kernels::add_inplace(added.data(), x.data(), rows * n, pool);
  EXPECT_EQ(serial, added);
  EXPECT_NE(serial, split);
  for (int which = 0; which < 2; ++which) {
    std::vector<float> a(x.begin(), x.begin() + 1001), c = a;  // not a whole number of vectors
    if (which == 0) {
      kernels::gelu_erf_inplace(a.data(), 1001);
      kernels::gelu_erf_inplace(c.data(), 1001, pool);
    } else {
      kernels::quick_gelu_inplace(a.data(), 1001);
      kernels::quick_gelu_inplace(c.data(), 1001, pool);
    }
    EXPECT_EQ(a, c) << which;
    EXPECT_NE(a, std::vector<float>(x.begin(), x.begin() + 1001)) << which;
  }
}

struct ConvCase {
  int64_t H, W, C, O, k, stride, pad;
  DType dt;
  bool bias;
  int64_t stride_w = 0;  // 0: same as stride
};

TEST(VisionKernels, Conv2dMatchesDirectConvolution) {
  ThreadPool pool(2);
  for (const ConvCase& cc : {ConvCase{9, 11, 5, 7, 3, 2, 1, DType::F32, false}, ConvCase{8, 8, 4, 6, 3, 1, 1, DType::BF16, false},
                             ConvCase{6, 6, 3, 10, 1, 1, 0, DType::F32, false}, ConvCase{16, 12, 3, 9, 4, 4, 0, DType::F32, true},
                             ConvCase{40, 40, 8, 24, 3, 2, 1, DType::F16, false},
                             ConvCase{12, 30, 4, 6, 3, 2, 1, DType::F32, true, 1}, ConvCase{9, 14, 3, 5, 3, 1, 1, DType::F32, false, 2},
                             ConvCase{7, 6, 32, 5, 3, 1, 1, DType::Q8_0, true}, ConvCase{5, 5, 2, 3, 5, 1, 3, DType::F32, false}}) {
    const int64_t sw = cc.stride_w ? cc.stride_w : cc.stride;
    const int64_t K = cc.C * cc.k * cc.k;
    auto x = randn(cc.H * cc.W * cc.C, 11);
    auto wf = randn(cc.O * K, 12, 0.3f);
    std::vector<uint8_t> wbytes(wf.size() * 4);
    convert_from_f32(cc.dt, wf.data(), wbytes.data(), static_cast<int64_t>(wf.size()));
    convert_to_f32(cc.dt, wbytes.data(), wf.data(), static_cast<int64_t>(wf.size()));  // what the kernel sees
    TensorView w{"test.conv", cc.dt, {cc.O, cc.C, cc.k, cc.k}, wbytes.data()};
    auto b = randn(cc.O, 13);
    const int64_t Ho = kernels::conv_out_size(cc.H, cc.k, cc.stride, cc.pad), Wo = kernels::conv_out_size(cc.W, cc.k, sw, cc.pad);
    std::vector<float> y(Ho * Wo * cc.O);
    if (cc.stride_w)
      kernels::conv2d_hwc(x.data(), cc.H, cc.W, cc.C, w, cc.bias ? b.data() : nullptr, cc.stride, sw, cc.pad, y.data(), pool);
    else
      kernels::conv2d_hwc(x.data(), cc.H, cc.W, cc.C, w, cc.bias ? b.data() : nullptr, cc.stride, cc.pad, y.data(), pool);
    std::vector<double> ref(y.size());
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t o = 0; o < cc.O; ++o) {
          double s = cc.bias ? b[o] : 0.0;
          for (int64_t c = 0; c < cc.C; ++c)
            for (int64_t ky = 0; ky < cc.k; ++ky)
              for (int64_t kx = 0; kx < cc.k; ++kx) {
                int64_t iy = oy * cc.stride - cc.pad + ky, ix = ox * sw - cc.pad + kx;
                if (iy < 0 || iy >= cc.H || ix < 0 || ix >= cc.W) continue;
                s += static_cast<double>(x[(iy * cc.W + ix) * cc.C + c]) * wf[((o * cc.C + c) * cc.k + ky) * cc.k + kx];
              }
          ref[(oy * Wo + ox) * cc.O + o] = s;
        }
    EXPECT_LT(max_diff(y, ref), 1e-4f) << "conv " << cc.H << "x" << cc.W << " k" << cc.k << " s" << cc.stride;
    // A filter built once gives the bits of the per-call one.
    const kernels::ConvFilter filter(w, cc.C);
    std::vector<float> y2(y.size());
    kernels::conv2d_hwc(x.data(), cc.H, cc.W, cc.C, filter, cc.bias ? b.data() : nullptr, cc.stride, sw, cc.pad, y2.data(), pool);
    EXPECT_EQ(y2, y) << "conv " << cc.H << "x" << cc.W << " k" << cc.k << " through a ConvFilter";
  }
}

TEST(VisionKernels, ConvFilterRejectsAMapWithOtherChannels) {
  ThreadPool pool(1);
  std::vector<float> x(4 * 4 * 3, 1.0f), y(4 * 4 * 6, 7.0f), w(6 * 2 * 9, 0.5f);
  const kernels::ConvFilter filter(TensorView{"mini_ocr.conv.1.weight", DType::F32, {6, 2, 3, 3}, w.data()}, 2);
  try {
    kernels::conv2d_hwc(x.data(), 4, 4, 3, filter, nullptr, 1, 1, 1, y.data(), pool);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mini_ocr.conv.1.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 channels"), std::string::npos) << e.what();
  }
  EXPECT_EQ(y, std::vector<float>(y.size(), 7.0f));  // nothing written
  kernels::conv2d_hwc(x.data(), 4, 4, 2, filter, nullptr, 1, 1, 1, y.data(), pool);  // still usable
  EXPECT_FLOAT_EQ(y[5 * 6], 9.0f);  // an inner pixel: 2 channels x 9 taps of 1 x 0.5
}

TEST(VisionKernels, Conv2dRejectsWrongWeight) {
  ThreadPool pool(1);
  std::vector<float> x(4 * 4 * 3), y(100), w(6 * 2 * 9);
  TensorView wv{"sam.neck.2.weight", DType::F32, {6, 2, 3, 3}, w.data()};
  try {
    kernels::conv2d_hwc(x.data(), 4, 4, 3, wv, nullptr, 1, 1, y.data(), pool);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sam.neck.2.weight"), std::string::npos) << e.what();
  }
}

// softmax(scale q.k + q.Th[qy-ky+Sh-1] + q.Tw[qx-kx+Sw-1]) v per (sequence, head, query).
std::vector<double> naive_attention(const std::vector<float>& qkv, int64_t n_seq, int64_t T, int64_t H, int64_t d, float scale,
                                    const kernels::RelPos2D* rel) {
  const int64_t D = H * d;
  std::vector<double> out(n_seq * T * D);
  for (int64_t s = 0; s < n_seq; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const float* q = &qkv[(s * T + i) * 3 * D + h * d];
        std::vector<double> sc(T);
        double m = -1e300;
        for (int64_t j = 0; j < T; ++j) {
          const float* k = &qkv[(s * T + j) * 3 * D + D + h * d];
          double v = 0;
          for (int64_t e = 0; e < d; ++e) v += static_cast<double>(q[e]) * k[e];
          v *= scale;
          if (rel) {
            int64_t qy = i / rel->side_w, qx = i % rel->side_w, ky = j / rel->side_w, kx = j % rel->side_w;
            const float* th = rel->table_h + (qy - ky + rel->side_h - 1) * d;
            const float* tw = rel->table_w + (qx - kx + rel->side_w - 1) * d;
            for (int64_t e = 0; e < d; ++e) v += static_cast<double>(q[e]) * th[e] + static_cast<double>(q[e]) * tw[e];
          }
          sc[j] = v;
          m = std::max(m, v);
        }
        double z = 0;
        for (auto& v : sc) z += (v = std::exp(v - m));
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += sc[j] / z * qkv[(s * T + j) * 3 * D + 2 * D + h * d + e];
          out[(s * T + i) * D + h * d + e] = acc;
        }
      }
  return out;
}

TEST(VisionKernels, DenseAttentionMatchesNaive) {
  const int64_t H = 3, d = 8, D = H * d;
  const float scale = 1.0f / std::sqrt(8.0f);
  // Without relative positions: CLIP-like, T crosses the 64-row query block.
  for (int64_t T : {5, 64, 101}) {
    auto qkv = randn(2 * T * 3 * D, 21);
    std::vector<float> out(2 * T * D);
    ThreadPool pool(2);
    kernels::dense_attention(qkv.data(), 2, T, H, d, scale, nullptr, out.data(), pool);
    EXPECT_LT(max_diff(out, naive_attention(qkv, 2, T, H, d, scale, nullptr)), 1e-5f) << "T=" << T;
  }
  // With relative positions on a 7 x 10 grid (non-square), 3 sequences.
  const int64_t sh = 7, sw = 10, T = sh * sw;
  auto qkv = randn(3 * T * 3 * D, 22);
  auto th = randn((2 * sh - 1) * d, 23, 0.5f), tw = randn((2 * sw - 1) * d, 24, 0.5f);
  kernels::RelPos2D rel{th.data(), tw.data(), sh, sw};
  std::vector<float> out1(3 * T * D), out2(3 * T * D);
  ThreadPool p1(1), p2(2);
  kernels::dense_attention(qkv.data(), 3, T, H, d, scale, &rel, out1.data(), p1);
  kernels::dense_attention(qkv.data(), 3, T, H, d, scale, &rel, out2.data(), p2);
  EXPECT_LT(max_diff(out1, naive_attention(qkv, 3, T, H, d, scale, &rel)), 1e-5f);
  EXPECT_EQ(out1, out2) << "results must not depend on the pool size";
  // The relative terms matter: dropping them changes the result.
  std::vector<float> plain(3 * T * D);
  kernels::dense_attention(qkv.data(), 3, T, H, d, scale, nullptr, plain.data(), p2);
  EXPECT_GT(max_diff(plain, naive_attention(qkv, 3, T, H, d, scale, &rel)), 1e-2f);
  kernels::RelPos2D bad{th.data(), tw.data(), 7, 9};
  EXPECT_THROW(kernels::dense_attention(qkv.data(), 3, T, H, d, scale, &bad, out1.data(), p2), Error);
}

// Antialiased bicubic written from the definition, in double, as a full 2-D weighted sum.
std::vector<double> aa_weights(int64_t in, int64_t out, int64_t o, int64_t& first) {
  const double scale = static_cast<double>(in) / out, support = scale >= 1 ? 2 * scale : 2.0, inv = scale >= 1 ? 1 / scale : 1.0;
  const double center = scale * (o + 0.5);
  first = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
  const int64_t last = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
  std::vector<double> w;
  double sum = 0;
  for (int64_t j = first; j < last; ++j) {
    double x = std::fabs((j - center + 0.5) * inv), a = -0.5, k = 0;
    if (x < 1) k = ((a + 2) * x - (a + 3)) * x * x + 1;
    else if (x < 2) k = (((x - 5) * x + 8) * x - 4) * a;
    w.push_back(k);
    sum += k;
  }
  for (auto& v : w) v /= sum;
  return w;
}

TEST(VisionKernels, BicubicAntialiasResizeMatchesDefinition) {
  struct Case { int64_t H, W, C, Ho, Wo; };
  for (const Case& c : {Case{16, 16, 3, 10, 10}, Case{64, 64, 2, 40, 40}, Case{5, 6, 2, 8, 9}, Case{12, 9, 1, 7, 11}}) {
    auto in = randn(c.H * c.W * c.C, 31);
    std::vector<float> out(c.Ho * c.Wo * c.C);
    kernels::resize_bicubic_aa_hwc(in.data(), c.H, c.W, c.C, out.data(), c.Ho, c.Wo);
    std::vector<double> ref(out.size());
    for (int64_t oy = 0; oy < c.Ho; ++oy) {
      int64_t y0;
      auto wy = aa_weights(c.H, c.Ho, oy, y0);
      for (int64_t ox = 0; ox < c.Wo; ++ox) {
        int64_t x0;
        auto wx = aa_weights(c.W, c.Wo, ox, x0);
        for (int64_t ch = 0; ch < c.C; ++ch) {
          double s = 0;
          for (size_t a = 0; a < wy.size(); ++a)
            for (size_t b = 0; b < wx.size(); ++b) s += wy[a] * wx[b] * in[((y0 + a) * c.W + x0 + b) * c.C + ch];
          ref[(oy * c.Wo + ox) * c.C + ch] = s;
        }
      }
    }
    EXPECT_LT(max_diff(out, ref), 2e-5f) << c.H << "x" << c.W << " -> " << c.Ho << "x" << c.Wo;
  }
  // Same size: identity (the cubic is 1 at 0 and 0 at the other integers).
  auto in = randn(7 * 5 * 3, 32);
  std::vector<float> out(in.size());
  kernels::resize_bicubic_aa_hwc(in.data(), 7, 5, 3, out.data(), 7, 5);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(out[i], in[i], 1e-6f);
}

TEST(VisionKernels, LinearRowResizeMatchesDefinition) {
  const int64_t L = 127, C = 4, Lo = 79;
  auto in = randn(L * C, 41);
  std::vector<float> out(Lo * C);
  kernels::resize_linear_rows(in.data(), L, C, out.data(), Lo);
  std::vector<double> ref(out.size());
  for (int64_t i = 0; i < Lo; ++i) {
    // The source coordinate is float32 by definition (PyTorch computes it so); the blend in double.
    const float scale = static_cast<float>(L) / static_cast<float>(Lo);
    double src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
    int64_t i0 = static_cast<int64_t>(std::floor(src)), i1 = std::min(i0 + 1, L - 1);
    double t = src - i0;
    for (int64_t c = 0; c < C; ++c) ref[i * C + c] = (1 - t) * in[i0 * C + c] + t * in[i1 * C + c];
  }
  EXPECT_LT(max_diff(out, ref), 1e-5f);
  std::vector<float> same(L * C);
  kernels::resize_linear_rows(in.data(), L, C, same.data(), L);
  EXPECT_EQ(same, in);
}


TEST(VisionKernels, Conv1dMatchesDirectConvolution) {
  ThreadPool pool(2);
  for (auto [T, C, O, k, pad] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{50, 8, 6, 5, 2}, {7, 3, 4, 3, 0},
                                 {130, 16, 16, 3, 1}}) {
    auto x = randn(T * C, 31);
    auto wf = randn(O * C * k, 32, 0.3f);
    auto b = randn(O, 33);
    TensorView w{"mini.context.0.weight", DType::F32, {O, C, k}, wf.data()};
    const int64_t To = T + 2 * pad - k + 1;
    std::vector<float> y(To * O);
    kernels::conv1d_tc(x.data(), T, C, w, b.data(), pad, y.data(), pool);
    std::vector<double> ref(y.size());
    for (int64_t t = 0; t < To; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double s = b[o];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < k; ++j) {
            int64_t it = t - pad + j;
            if (it >= 0 && it < T) s += static_cast<double>(x[it * C + c]) * wf[(o * C + c) * k + j];
          }
        ref[t * O + o] = s;
      }
    EXPECT_LT(max_diff(y, ref), 1e-4f) << "conv1d T" << T << " k" << k;
  }
  std::vector<float> x(10 * 4), y(100), wf(6 * 3 * 5);
  TensorView bad{"mini.context.1.weight", DType::F32, {6, 3, 5}, wf.data()};
  try {
    kernels::conv1d_tc(x.data(), 10, 4, bad, nullptr, 2, y.data(), pool);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mini.context.1.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace folio
