#include "vision/mini_ocr_frontend.h"

#include <algorithm>

#include "core/tensor.h"
#include "kernels/cpu/conv1d.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"

namespace folio {

namespace {

constexpr float kLayerNormEps = 1e-5f;  // torch.nn.LayerNorm's default

void relu_inplace(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
}

std::vector<float> f32(const TensorSource& w, const std::string& name, const std::vector<int64_t>& shape) {
  return to_f32_vector(w.get(name, shape));
}

}  // namespace

std::string MiniOcrRow::text() const {
  std::string s;
  for (int32_t k : emit_label) s.push_back(static_cast<char>(k + 31));
  return s;
}

MiniOcrFrontEnd::MiniOcrFrontEnd(const MiniOcrConfig& cfg, const TensorSource& w) : cfg_(cfg) {
  cfg_.validate();
  int64_t cin = 1;
  for (size_t i = 0; i < cfg_.conv_channels.size(); ++i) {
    const int64_t cout = cfg_.conv_channels[i];
    const std::string p = "mini_ocr.conv." + std::to_string(i) + ".";
    conv_.emplace_back(w.get(p + "weight", {cout, cin, 3, 3}), cin);
    conv_b_.push_back(f32(w, p + "bias", {cout}));
    cin = cout;
  }
  const int64_t d = cfg_.frame_hidden;
  proj_w_ = &w.get("mini_ocr.proj.weight", {d, cfg_.band_out_height() * cin});
  proj_b_ = f32(w, "mini_ocr.proj.bias", {d});
  proj_norm_w_ = f32(w, "mini_ocr.proj_norm.weight", {d});
  proj_norm_b_ = f32(w, "mini_ocr.proj_norm.bias", {d});
  for (int64_t i = 0; i < cfg_.context_layers; ++i) {
    const std::string p = "mini_ocr.context." + std::to_string(i) + ".";
    ctx_w_.push_back(&w.get(p + "weight", {d, d, cfg_.context_kernel}));
    ctx_b_.push_back(f32(w, p + "bias", {d}));
  }
  norm_w_ = f32(w, "mini_ocr.norm.weight", {d});
  norm_b_ = f32(w, "mini_ocr.norm.bias", {d});
  ctc_w_ = &w.get("mini_ocr.ctc_head.weight", {cfg_.ctc_vocab, d});
  ctc_b_ = f32(w, "mini_ocr.ctc_head.bias", {cfg_.ctc_vocab});
}

MiniOcrRow MiniOcrFrontEnd::read_band(const float* band, ThreadPool& pool, std::vector<float>* ctc_logits) const {
  // CNN over the band, HWC maps.
  int64_t H = cfg_.line_pitch, W = cfg_.image_width, C = 1;
  std::vector<float> x(band, band + H * W), y;
  for (size_t i = 0; i < conv_.size(); ++i) {
    const int64_t sh = cfg_.conv_strides[i][0], sw = cfg_.conv_strides[i][1];
    const int64_t Ho = kernels::conv_out_size(H, 3, sh, 1), Wo = kernels::conv_out_size(W, 3, sw, 1);
    const int64_t O = conv_[i].out_channels();
    y.assign(static_cast<size_t>(Ho * Wo * O), 0.0f);
    kernels::conv2d_hwc(x.data(), H, W, C, conv_[i], conv_b_[i].data(), sh, sw, 1, y.data(), pool);
    relu_inplace(y.data(), y.size());
    x.swap(y);
    H = Ho, W = Wo, C = O;
  }
  // Each column's (row, channel) values become one frame: gather HWC into [W, H * C].
  const int64_t T = W, d = cfg_.frame_hidden;
  std::vector<float> cols(static_cast<size_t>(T * H * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < H; ++r) std::copy_n(x.data() + (r * W + t) * C, C, cols.data() + (t * H + r) * C);
  MiniOcrRow row;
  row.frames.assign(static_cast<size_t>(T * d), 0.0f);
  kernels::matmul(*proj_w_, cols.data(), T, row.frames.data(), pool);
  kernels::add_bias(row.frames.data(), proj_b_.data(), T, d);
  kernels::layer_norm(row.frames.data(), proj_norm_w_.data(), proj_norm_b_.data(), row.frames.data(), T, d, kLayerNormEps);
  std::vector<float> c(static_cast<size_t>(T * d));
  for (size_t i = 0; i < ctx_w_.size(); ++i) {
    kernels::conv1d_tc(row.frames.data(), T, d, *ctx_w_[i], ctx_b_[i].data(), cfg_.context_kernel / 2, c.data(), pool);
    relu_inplace(c.data(), c.size());
    kernels::add_inplace(row.frames.data(), c.data(), T * d);
  }
  kernels::layer_norm(row.frames.data(), norm_w_.data(), norm_b_.data(), row.frames.data(), T, d, kLayerNormEps);
  // CTC head and the greedy path: emit a class when it differs from the previous frame's and is not blank.
  const int64_t V = cfg_.ctc_vocab;
  std::vector<float> logits(static_cast<size_t>(T * V));
  kernels::matmul(*ctc_w_, row.frames.data(), T, logits.data(), pool);
  kernels::add_bias(logits.data(), ctc_b_.data(), T, V);
  int32_t prev = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* l = logits.data() + t * V;
    const auto best = static_cast<int32_t>(std::max_element(l, l + V) - l);
    if (best != 0 && best != prev) {
      row.emit_frame.push_back(static_cast<int32_t>(t));
      row.emit_label.push_back(best);
    }
    prev = best;
  }
  if (ctc_logits) *ctc_logits = std::move(logits);
  return row;
}

std::vector<MiniOcrRow> MiniOcrFrontEnd::read_page(const float* gray, ThreadPool& pool) const {
  const int64_t W = cfg_.image_width, pitch = cfg_.line_pitch;
  std::vector<MiniOcrRow> rows;
  std::vector<float> band(static_cast<size_t>(pitch * W));
  for (int64_t r = 0; r < cfg_.rows; ++r) {
    const float* src = gray + (cfg_.margin_top + r * pitch) * W;
    for (int64_t i = 0; i < pitch * W; ++i) band[static_cast<size_t>(i)] = (src[i] - cfg_.pixel_mean) / cfg_.pixel_std;
    rows.push_back(read_band(band.data(), pool));
  }
  return rows;
}

}  // namespace folio
