#include "model/vision/line_recognizer.h"

#include <algorithm>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"

namespace folio {

namespace {

constexpr int kConvs = 4;
// Max-pool (rows, columns) after each convolution; {1, 1} = none.
constexpr int64_t kPool[kConvs][2] = {{2, 2}, {2, 2}, {2, 1}, {1, 1}};

void relu_inplace(std::vector<float>& x) {
  for (float& v : x) v = std::max(v, 0.0f);
}

// Non-overlapping max-pool of an HWC map by (ph, pw); H and W are multiples of them here.
std::vector<float> max_pool_hwc(const std::vector<float>& x, int64_t& H, int64_t& W, int64_t C, int64_t ph, int64_t pw) {
  const int64_t Ho = H / ph, Wo = W / pw;
  std::vector<float> y(static_cast<size_t>(Ho * Wo * C), -1e30f);
  for (int64_t r = 0; r < Ho * ph; ++r)
    for (int64_t c = 0; c < Wo * pw; ++c) {
      const float* src = x.data() + (r * W + c) * C;
      float* dst = y.data() + ((r / ph) * Wo + c / pw) * C;
      for (int64_t k = 0; k < C; ++k) dst[k] = std::max(dst[k], src[k]);
    }
  H = Ho, W = Wo;
  return y;
}

std::vector<std::string> utf8_characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

LineRecognizer::LineRecognizer(const TensorSource& w, const std::string& charset, const std::string& prefix)
    : glyphs_(utf8_characters(charset)) {
  int64_t cin = 1, rows = kHeight;
  for (int i = 0; i < kConvs; ++i) {
    const std::string p = prefix + "conv" + std::to_string(i) + ".";
    const TensorView& cw = w.get(p + "weight");
    FOLIO_CHECK_INPUT(cw.shape.size() == 4 && cw.shape[1] == cin && cw.shape[2] == 3 && cw.shape[3] == 3,
                      "tensor '" + p + "weight' in " + w.description() + " has shape " + shape_to_string(cw.shape) +
                          ", expected [out, " + std::to_string(cin) + ", 3, 3]");
    conv_w_.push_back(&cw);
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
    block_w_.push_back(&w.get(p + "weight", {d, d, 3}));
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
}

std::vector<float> LineRecognizer::logits(const float* crop, int64_t width, ThreadPool& pool) const {
  FOLIO_CHECK_INPUT(width > 0 && width % kFrameStride == 0,
                    "line recognizer: crop width " + std::to_string(width) + " is not a positive multiple of 4");
  int64_t H = kHeight, W = width, C = 1;
  std::vector<float> x(crop, crop + H * W), y;
  for (int i = 0; i < kConvs; ++i) {
    const int64_t O = conv_w_[i]->shape[0];
    y.assign(static_cast<size_t>(H * W * O), 0.0f);
    kernels::conv2d_hwc(x.data(), H, W, C, *conv_w_[i], conv_b_[i].data(), 1, 1, 1, y.data(), pool);
    relu_inplace(y);
    C = O;
    x = (kPool[i][0] > 1 || kPool[i][1] > 1) ? max_pool_hwc(y, H, W, C, kPool[i][0], kPool[i][1]) : std::move(y);
  }
  // Frame t: its H rows x C channels, row major (the proj columns' order, export_recognizer.py).
  const int64_t T = W, d = proj_w_->shape[0];
  std::vector<float> cols(static_cast<size_t>(T * H * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < H; ++r) std::copy_n(x.data() + (r * W + t) * C, C, cols.data() + (t * H + r) * C);
  std::vector<float> f(static_cast<size_t>(T * d)), c(static_cast<size_t>(T * d));
  kernels::matmul(*proj_w_, cols.data(), T, f.data(), pool);
  kernels::add_bias(f.data(), proj_b_.data(), T, d);
  relu_inplace(f);
  for (size_t i = 0; i < block_w_.size(); ++i) {
    kernels::conv1d_tc(f.data(), T, d, *block_w_[i], block_b_[i].data(), 1, c.data(), pool);
    relu_inplace(c);
    kernels::add_inplace(f.data(), c.data(), T * d);
  }
  const int64_t V = classes();
  std::vector<float> out(static_cast<size_t>(T * V));
  kernels::matmul(*head_w_, f.data(), T, out.data(), pool);
  kernels::add_bias(out.data(), head_b_.data(), T, V);
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

}  // namespace folio
