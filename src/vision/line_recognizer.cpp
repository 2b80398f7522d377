#include "vision/line_recognizer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"
#include "text/utf8.h"

namespace folio {

namespace {

constexpr int kConvs = 4;
// Max-pool (rows, columns) after each convolution; {1, 1} = none.
constexpr int64_t kPool[kConvs][2] = {{2, 2}, {2, 2}, {2, 1}, {1, 1}};

// The charset's characters, one UTF-8 string each.
std::vector<std::string> utf8_characters(const std::string& s) {
  const DecodedText d = decode_utf8(s);
  std::vector<std::string> out;
  for (size_t i = 0; i < d.cps.size(); ++i) out.push_back(s.substr(d.offsets[i], d.offsets[i + 1] - d.offsets[i]));
  return out;
}

// w [O, C, taps...] (taps = 9 for 3x3, 3 for k=3) -> [O, taps * C] with columns (tap, c).
std::vector<float> taps_major(const TensorView& w, int64_t taps) {
  const std::vector<float> src = to_f32_vector(w);
  const int64_t O = w.shape[0], C = w.shape[1];
  std::vector<float> out(src.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t) out[(o * taps + t) * C + c] = src[(o * C + c) * taps + t];
  return out;
}

// im2col of a 3x3, padding-1 convolution over an HWC map: row (y, x) holds the 9 neighbours' C
// channels in (ky, kx) order, zeros outside the map.
void im2col3x3(const float* x, int64_t H, int64_t W, int64_t C, float* cols) {
  const size_t run = static_cast<size_t>(C) * sizeof(float);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t xx = 0; xx < W; ++xx) {
      float* row = cols + (y * W + xx) * 9 * C;
      for (int64_t ky = 0; ky < 3; ++ky) {
        const int64_t iy = y + ky - 1;
        for (int64_t kx = 0; kx < 3; ++kx, row += C) {
          const int64_t ix = xx + kx - 1;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W)
            std::memset(row, 0, run);
          else
            std::memcpy(row, x + (iy * W + ix) * C, run);
        }
      }
    }
}

// HWC [H, W, C] -> frames [W, H * C]: frame t is its H rows x C channels, row major (the proj
// columns' order, export_recognizer.py).
template <typename T>
void frames_of(const T* x, int64_t H, int64_t W, int64_t C, T* frames) {
  for (int64_t t = 0; t < W; ++t)
    for (int64_t r = 0; r < H; ++r) std::copy_n(x + (r * W + t) * C, C, frames + (t * H + r) * C);
}

// im2col of a k = 3, padding-1 conv1d over [T, d]: row t is [f[t-1], f[t], f[t+1]], zeros outside.
void taps3(const float* f, int64_t frames, int64_t d, float* cols) {
  for (int64_t t = 0; t < frames; ++t)
    for (int64_t j = 0; j < 3; ++j) {
      float* dst = cols + (t * 3 + j) * d;
      const int64_t it = t + j - 1;
      if (it < 0 || it >= frames)
        std::fill_n(dst, d, 0.0f);
      else
        std::copy_n(f + it * d, d, dst);
    }
}

// y = maxpool(ReLU(x + bias)) over (ph, pw) windows of an HWC map (H, W multiples of them),
// computed as ReLU(maxpool(x) + bias): rounding is monotonic, so the bias added to the window's
// largest value is the largest of the bias added to each (the same bits, a quarter of the adds).
void bias_relu_pool(const float* x, int64_t H, int64_t W, int64_t C, const float* bias, int64_t ph, int64_t pw, float* y) {
  const int64_t Ho = H / ph, Wo = W / pw;
  for (int64_t r = 0; r < Ho; ++r)
    for (int64_t c = 0; c < Wo; ++c) {
      float* __restrict dst = y + (r * Wo + c) * C;
      std::copy_n(x + (r * ph * W + c * pw) * C, C, dst);
      for (int64_t dr = 0; dr < ph; ++dr)
        for (int64_t dc = dr == 0 ? 1 : 0; dc < pw; ++dc) {
          const float* __restrict src = x + ((r * ph + dr) * W + c * pw + dc) * C;
          for (int64_t k = 0; k < C; ++k) dst[k] = std::max(dst[k], src[k]);
        }
      for (int64_t k = 0; k < C; ++k) dst[k] = std::max(dst[k] + bias[k], 0.0f);
    }
}

void relu_inplace(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
}

}  // namespace

LineRecognizer::LineRecognizer(const TensorSource& w, const std::string& charset, const std::string& prefix,
                               Precision precision)
    : glyphs_(utf8_characters(charset)) {
  int64_t cin = 1, rows = kHeight;
  for (int i = 0; i < kConvs; ++i) {
    const std::string p = prefix + "conv" + std::to_string(i) + ".";
    const TensorView& cw = w.get(p + "weight");
    FOLIO_CHECK_INPUT(cw.shape.size() == 4 && cw.shape[1] == cin && cw.shape[2] == 3 && cw.shape[3] == 3,
                      "tensor '" + p + "weight' in " + w.description() + " has shape " + shape_to_string(cw.shape) +
                          ", expected [out, " + std::to_string(cin) + ", 3, 3]");
    conv_w_.push_back({p + "weight", cw.shape[0], 9 * cin, taps_major(cw, 9)});
    conv_b_.push_back(to_f32_vector(w.get(p + "bias", {cw.shape[0]})));
    cin = cw.shape[0];
    rows /= kPool[i][0];
  }
  const TensorView& pw = w.get(prefix + "proj.weight");
  FOLIO_CHECK_INPUT(pw.shape.size() == 2 && pw.shape[1] == rows * cin,
                    "tensor '" + prefix + "proj.weight' in " + w.description() + " has shape " + shape_to_string(pw.shape) +
                        ", expected [width, " + std::to_string(rows * cin) + "]");
  proj_w_ = &pw;
  const int64_t d = pw.shape[0];
  proj_b_ = to_f32_vector(w.get(prefix + "proj.bias", {d}));
  for (int i = 0; w.contains(prefix + "block" + std::to_string(i) + ".weight"); ++i) {
    const std::string p = prefix + "block" + std::to_string(i) + ".";
    block_w_.push_back({p + "weight", d, 3 * d, taps_major(w.get(p + "weight", {d, d, 3}), 3)});
    block_b_.push_back(to_f32_vector(w.get(p + "bias", {d})));
  }
  head_w_ = &w.get(prefix + "head.weight");
  FOLIO_CHECK_INPUT(head_w_->shape.size() == 2 && head_w_->shape[1] == d,
                    "tensor '" + prefix + "head.weight' in " + w.description() + " has shape " +
                        shape_to_string(head_w_->shape) + ", expected [classes, " + std::to_string(d) + "]");
  head_b_ = to_f32_vector(w.get(prefix + "head.bias", {head_w_->shape[0]}));
  FOLIO_CHECK_INPUT(static_cast<int64_t>(glyphs_.size()) + 1 == head_w_->shape[0],
                    "line recognizer in " + w.description() + ": the charset has " + std::to_string(glyphs_.size()) +
                        " characters but the head reads " + std::to_string(head_w_->shape[0]) + " classes (blank + charset)");
  if (precision == Precision::Int8) quantize_layers();
}

void LineRecognizer::quantize_layers() {
  // conv0 (one input channel): each kernel row's 3 weights and a zero, as run_int8 reads its input.
  const OwnedWeight& c0 = conv_w_[0];
  std::vector<float> conv0(static_cast<size_t>(c0.rows * 12), 0.0f);
  for (int64_t o = 0; o < c0.rows; ++o)
    for (int64_t t = 0; t < 9; ++t) conv0[static_cast<size_t>(o * 12 + (t / 3) * 4 + t % 3)] = c0.values[static_cast<size_t>(o * 9 + t)];
  std::vector<std::pair<const float*, std::array<int64_t, 2>>> layers{{conv0.data(), {c0.rows, 12}}};
  for (size_t i = 1; i < conv_w_.size(); ++i) layers.push_back({conv_w_[i].values.data(), {conv_w_[i].rows, conv_w_[i].cols}});
  const std::vector<float> proj = to_f32_vector(*proj_w_), head = to_f32_vector(*head_w_);
  layers.push_back({proj.data(), {proj_w_->shape[0], proj_w_->shape[1]}});
  for (const OwnedWeight& b : block_w_) layers.push_back({b.values.data(), {b.rows, b.cols}});
  layers.push_back({head.data(), {head_w_->shape[0], head_w_->shape[1]}});
  for (const auto& [values, shape] : layers)
    if (shape[1] % 4 != 0) return;  // stays F32 (see the header)
  for (const auto& [values, shape] : layers) int8_.push_back(kernels::Int8Weights::quantize(values, shape[0], shape[1]));
}

std::vector<float> LineRecognizer::logits(const float* crop, int64_t width, ThreadPool&) const {
  ThreadPool serial(1);
  return run(crop, width, serial);
}

std::vector<float> LineRecognizer::run(const float* crop, int64_t width, ThreadPool& serial) const {
  FOLIO_CHECK_INPUT(width > 0 && width % kFrameStride == 0,
                    "line recognizer: crop width " + std::to_string(width) + " is not a positive multiple of 4");
  if (!int8_.empty()) return run_int8(crop, width);
  int64_t H = kHeight, W = width, C = 1;
  std::vector<float> x(crop, crop + H * W), cols, y;
  for (int i = 0; i < kConvs; ++i) {
    const int64_t O = conv_w_[i].rows;
    cols.resize(static_cast<size_t>(H * W * 9 * C));
    im2col3x3(x.data(), H, W, C, cols.data());
    y.resize(static_cast<size_t>(H * W * O));
    kernels::matmul(conv_w_[i].view(), cols.data(), H * W, y.data(), serial);
    C = O;
    x.resize(static_cast<size_t>((H / kPool[i][0]) * (W / kPool[i][1]) * C));
    bias_relu_pool(y.data(), H, W, C, conv_b_[i].data(), kPool[i][0], kPool[i][1], x.data());
    H /= kPool[i][0], W /= kPool[i][1];
  }
  const int64_t T = W, d = proj_w_->shape[0];
  cols.resize(static_cast<size_t>(T * H * C));
  frames_of(x.data(), H, W, C, cols.data());
  std::vector<float> f(static_cast<size_t>(T * d)), c(static_cast<size_t>(T * d));
  kernels::matmul(*proj_w_, cols.data(), T, f.data(), serial);
  kernels::add_bias(f.data(), proj_b_.data(), T, d);
  relu_inplace(f.data(), f.size());
  cols.resize(static_cast<size_t>(T * 3 * d));
  for (size_t i = 0; i < block_w_.size(); ++i) {
    taps3(f.data(), T, d, cols.data());
    kernels::matmul(block_w_[i].view(), cols.data(), T, c.data(), serial);
    kernels::add_bias(c.data(), block_b_[i].data(), T, d);
    relu_inplace(c.data(), c.size());
    kernels::add_inplace(f.data(), c.data(), T * d);
  }
  const int64_t V = classes();
  std::vector<float> out(static_cast<size_t>(T * V));
  kernels::matmul(*head_w_, f.data(), T, out.data(), serial);
  kernels::add_bias(out.data(), head_b_.data(), T, V);
  return out;
}

std::vector<float> LineRecognizer::run_int8(const float* crop, int64_t width) const {
  // Every layer's input is >= 0 (the crop's ink, ReLU outputs, and the residual stream, a sum of
  // them), so each is quantised whole with one scale. The convolutions read their zero-padded input
  // through taps (kernels::gemm_int8_taps) instead of an im2col copy: conv0's single channel as 3
  // taps (one per kernel row) of 4 bytes, x-1 .. x+2, whose 4th weight is zero; the others as 9 taps
  // of C channels.
  int64_t H = kHeight, W = width, C = 1;
  auto layer = int8_.begin();
  std::vector<uint8_t> q, padded;
  std::vector<float> x(crop, crop + H * W), y;
  for (int i = 0; i < kConvs; ++i, ++layer) {
    const int64_t O = conv_w_[static_cast<size_t>(i)].rows, Wp = W + (i == 0 ? 3 : 2);
    q.resize(static_cast<size_t>(H * W * C));
    const float scale = kernels::quantize_u7(x.data(), H * W * C, q.data());
    padded.assign(static_cast<size_t>((H + 2) * Wp * C), 0);
    for (int64_t r = 0; r < H; ++r) std::copy_n(q.data() + r * W * C, W * C, padded.data() + ((r + 1) * Wp + 1) * C);
    std::vector<int64_t> taps;
    for (int64_t t = 0; t < (i == 0 ? 3 : 9); ++t) taps.push_back(i == 0 ? t * Wp : ((t / 3) * Wp + t % 3) * C);
    y.resize(static_cast<size_t>(H * W * O));
    for (int64_t r = 0; r < H; ++r)
      kernels::gemm_int8_taps(padded.data() + r * Wp * C, W, C, taps, scale, *layer, nullptr, y.data() + r * W * O);
    C = O;
    x.resize(static_cast<size_t>((H / kPool[i][0]) * (W / kPool[i][1]) * C));
    bias_relu_pool(y.data(), H, W, C, conv_b_[static_cast<size_t>(i)].data(), kPool[i][0], kPool[i][1], x.data());
    H /= kPool[i][0], W /= kPool[i][1];
  }
  const int64_t T = W, d = proj_w_->shape[0];
  q.resize(static_cast<size_t>(H * W * C));
  float scale = kernels::quantize_u7(x.data(), H * W * C, q.data());
  std::vector<uint8_t> frames(static_cast<size_t>(T * H * C));
  frames_of(q.data(), H, W, C, frames.data());
  std::vector<float> f(static_cast<size_t>(T * d)), c(static_cast<size_t>(T * d));
  kernels::gemm_int8(frames.data(), T, scale, *layer++, proj_b_.data(), f.data());
  relu_inplace(f.data(), f.size());
  // The conv1d blocks read frames t-1, t, t+1 of the stream padded by a zero frame at each end.
  padded.assign(static_cast<size_t>((T + 2) * d), 0);
  const int64_t taps[3] = {0, d, 2 * d};
  for (size_t i = 0; i < block_w_.size(); ++i, ++layer) {
    scale = kernels::quantize_u7(f.data(), T * d, padded.data() + d);
    kernels::gemm_int8_taps(padded.data(), T, d, taps, scale, *layer, block_b_[i].data(), c.data());
    relu_inplace(c.data(), c.size());
    kernels::add_inplace(f.data(), c.data(), T * d);
  }
  std::vector<float> out(static_cast<size_t>(T * classes()));
  scale = kernels::quantize_u7(f.data(), T * d, padded.data() + d);
  kernels::gemm_int8(padded.data() + d, T, scale, *layer, head_b_.data(), out.data());
  return out;
}

std::string LineRecognizer::greedy_text(const std::vector<float>& logits) const {
  const int64_t V = classes(), T = static_cast<int64_t>(logits.size()) / V;
  std::string s;
  int64_t prev = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* l = logits.data() + t * V;
    const int64_t best = std::max_element(l, l + V) - l;
    if (best != 0 && best != prev) s += glyphs_[static_cast<size_t>(best - 1)];
    prev = best;
  }
  return s;
}

std::string LineRecognizer::read(const float* crop, int64_t width, ThreadPool& pool) const {
  return greedy_text(logits(crop, width, pool));
}

std::vector<std::string> LineRecognizer::read_many(const std::vector<const LineCrop*>& crops, ThreadPool& pool) const {
  // Widest first, each thread taking the next line when it is free: the page's time is about its
  // total width over the threads, whatever the mix of widths.
  std::vector<size_t> order(crops.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return crops[a]->width > crops[b]->width; });
  std::vector<std::string> out(crops.size());
  std::atomic<size_t> next{0};
  pool.run_on_all([&](int) {
    ThreadPool serial(1);
    for (size_t k = next++; k < order.size(); k = next++) {
      const LineCrop& c = *crops[order[k]];
      out[order[k]] = greedy_text(run(c.ink.data(), c.width, serial));
    }
  });
  return out;
}

}  // namespace folio
