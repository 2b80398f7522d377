#include "vision/clip_encoder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/dense_attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/resize.h"

namespace folio {

std::vector<std::string> ClipEncoder::unused_tensor_names(const std::string& p) {
  return {p + "embeddings.patch_embedding.weight", p + "embeddings.position_ids"};
}

ClipEncoder::ClipEncoder(const VisionConfig& cfg, VisionWeights& W, const std::string& p) : cfg_(cfg) {
  cfg_.validate();
  const int64_t D = cfg_.clip_width, M = cfg_.clip_mlp;
  cls_ = W.f32(p + "embeddings.class_embedding", {D});
  // The table's length fixes the trained grid: 1 + side^2 rows (257 for CLIP-L/14 at 224).
  const std::string pos_name = p + "embeddings.position_embedding.weight";
  const TensorView& pos = W.source().get(pos_name);
  FOLIO_CHECK_INPUT(pos.shape.size() == 2 && pos.shape[1] == D && pos.shape[0] > 1,
                    "tensor '" + pos_name + "' has shape " + shape_to_string(pos.shape) + ", expected [1 + side^2, " +
                        std::to_string(D) + "]");
  pos_side_ = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(pos.shape[0] - 1))));
  FOLIO_CHECK_INPUT(pos_side_ * pos_side_ == pos.shape[0] - 1,
                    "tensor '" + pos_name + "' has " + std::to_string(pos.shape[0]) + " rows, not 1 + a square");
  std::vector<float> all = W.f32(pos_name, pos.shape);
  pos_cls_.assign(all.begin(), all.begin() + D);
  pos_grid_.assign(all.begin() + D, all.end());
  pre_w_ = W.f32(p + "pre_layrnorm.weight", {D});
  pre_b_ = W.f32(p + "pre_layrnorm.bias", {D});
  for (int64_t i = 0; i < cfg_.clip_layers; ++i) {
    const std::string b = p + "transformer.layers." + std::to_string(i) + ".";
    Layer L;
    L.ln1_w = W.f32(b + "layer_norm1.weight", {D});
    L.ln1_b = W.f32(b + "layer_norm1.bias", {D});
    L.ln2_w = W.f32(b + "layer_norm2.weight", {D});
    L.ln2_b = W.f32(b + "layer_norm2.bias", {D});
    L.qkv = &W.tensor(b + "self_attn.qkv_proj.weight", {3 * D, D});
    L.qkv_b = W.f32(b + "self_attn.qkv_proj.bias", {3 * D});
    L.out = &W.tensor(b + "self_attn.out_proj.weight", {D, D});
    L.out_b = W.f32(b + "self_attn.out_proj.bias", {D});
    L.fc1 = &W.tensor(b + "mlp.fc1.weight", {M, D});
    L.fc1_b = W.f32(b + "mlp.fc1.bias", {M});
    L.fc2 = &W.tensor(b + "mlp.fc2.weight", {D, M});
    L.fc2_b = W.f32(b + "mlp.fc2.bias", {D});
    layers_.push_back(std::move(L));
  }
}

const std::vector<float>& ClipEncoder::patch_positions(int64_t side) const {
  if (side == pos_side_) return pos_grid_;
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = pos_cache_.find(side);
  if (it != pos_cache_.end()) return it->second;
  std::vector<float> t(static_cast<size_t>(side * side * cfg_.clip_width));
  kernels::resize_bicubic_aa_hwc(pos_grid_.data(), pos_side_, pos_side_, cfg_.clip_width, t.data(), side, side);
  return pos_cache_.emplace(side, std::move(t)).first->second;
}

std::vector<float> ClipEncoder::forward(const float* tokens, int64_t side, ThreadPool& pool) const {
  FOLIO_CHECK_INPUT(side > 0, "CLIP: grid side must be positive, got " + std::to_string(side));
  const int64_t D = cfg_.clip_width, T = 1 + side * side;
  std::vector<float> x(static_cast<size_t>(T * D));
  for (int64_t i = 0; i < D; ++i) x[static_cast<size_t>(i)] = cls_[static_cast<size_t>(i)] + pos_cls_[static_cast<size_t>(i)];
  const std::vector<float>& pos = patch_positions(side);
  for (int64_t i = 0; i < (T - 1) * D; ++i) x[static_cast<size_t>(D + i)] = tokens[i] + pos[static_cast<size_t>(i)];
  kernels::layer_norm(x.data(), pre_w_.data(), pre_b_.data(), x.data(), T, D, cfg_.clip_eps, pool);

  const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.clip_head_dim()));
  std::vector<float> y(static_cast<size_t>(T * D)), qkv(static_cast<size_t>(T * 3 * D)), att(static_cast<size_t>(T * D));
  kernels::MlpScratch hidden;
  for (const Layer& L : layers_) {
    const kernels::NormedRows norm1{x.data(), L.ln1_w.data(), L.ln1_b.data(), cfg_.clip_eps, D};
    kernels::qkv_attention(*L.qkv, L.qkv_b.data(), norm1, 1, T, cfg_.clip_heads, cfg_.clip_head_dim(), scale, nullptr,
                           qkv.data(), att.data(), pool, precision_);
    kernels::linear(*L.out, L.out_b.data(), att.data(), T, y.data(), pool, precision_);
    kernels::add_inplace(x.data(), y.data(), T * D, pool);
    const kernels::NormedRows norm2{x.data(), L.ln2_w.data(), L.ln2_b.data(), cfg_.clip_eps, D};
    kernels::mlp(*L.fc1, L.fc1_b.data(), kernels::Activation::QuickGelu, *L.fc2, L.fc2_b.data(), norm2, T, y.data(),
                 hidden, pool, precision_);
    kernels::add_inplace(x.data(), y.data(), T * D, pool);
  }
  return x;
}

}  // namespace folio
