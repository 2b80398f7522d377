#include "vision/deep_encoder.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "vision/vision_weights.h"

namespace folio {

DeepEncoder::DeepEncoder(const VisionConfig& config, const TensorSource& weights) : cfg_(config) {
  cfg_.validate();
  VisionWeights W(weights);
  sam_ = std::make_unique<SamEncoder>(cfg_, W);
  clip_ = std::make_unique<ClipEncoder>(cfg_, W);
  const int64_t in = cfg_.clip_width + cfg_.sam_channels();
  proj_w_ = &W.tensor("model.projector.layers.weight", {cfg_.n_embed, in});
  proj_b_ = W.f32("model.projector.layers.bias", {cfg_.n_embed});
  newline_ = W.f32("model.image_newline", {cfg_.n_embed});
  separator_ = W.f32("model.view_seperator", {cfg_.n_embed});
  std::set<std::string> ignored;
  for (const std::string& n : ClipEncoder::unused_tensor_names()) ignored.insert(n);
  W.reject_unused({"model.sam_model.", "model.vision_model.", "model.projector."}, ignored);
}

void DeepEncoder::set_precision(kernels::GemmPrecision p) {
  // Bf16 is a request: a CPU without AVX512-BF16 runs f32, and precision() says so.
  if (!kernels::bf16_gemm_supported()) p = kernels::GemmPrecision::F32;
  precision_ = p;
  sam_->set_precision(p);
  clip_->set_precision(p);
}

SamEncoder::Output DeepEncoder::sam(const float* pixels, int64_t size, ThreadPool& pool) const {
  return sam_->forward(pixels, size, pool);
}

std::vector<float> DeepEncoder::clip(const SamEncoder::Output& s, ThreadPool& pool) const {
  FOLIO_CHECK_INPUT(s.channels == cfg_.clip_width && static_cast<int64_t>(s.tokens.size()) == s.side * s.side * s.channels,
                    "CLIP input: " + std::to_string(s.channels) + " channels, expected " + std::to_string(cfg_.clip_width));
  return clip_->forward(s.tokens.data(), s.side, pool);
}

std::vector<float> DeepEncoder::project(const float* clip_out, const float* sam_tokens, int64_t n, ThreadPool& pool) const {
  const int64_t C = cfg_.clip_width, S = cfg_.sam_channels(), in = C + S;
  // Per token: [CLIP features (CLS skipped) | SAM features], CLIP first.
  std::vector<float> cat(static_cast<size_t>(n * in));
  for (int64_t t = 0; t < n; ++t) {
    std::copy_n(clip_out + (1 + t) * C, C, cat.data() + t * in);
    std::copy_n(sam_tokens + t * S, S, cat.data() + t * in + C);
  }
  std::vector<float> y(static_cast<size_t>(n * cfg_.n_embed));
  kernels::linear(*proj_w_, proj_b_.data(), cat.data(), n, y.data(), pool, precision_);
  return y;
}

ViewFeatures DeepEncoder::encode_view(const float* pixels, int64_t size, ThreadPool& pool) const {
  SamEncoder::Output s = sam(pixels, size, pool);
  std::vector<float> c = clip(s, pool);
  ViewFeatures v;
  v.side = s.side;
  v.dim = cfg_.n_embed;
  v.rows = project(c.data(), s.tokens.data(), s.side * s.side, pool);
  return v;
}

std::vector<float> DeepEncoder::assemble(const ViewFeatures& global, std::span<const ViewFeatures> tiles, TileLayout grid) const {
  FOLIO_CHECK_INPUT(global.dim == cfg_.n_embed, "image assembly: view features have dim " + std::to_string(global.dim) +
                                                    ", the projector gives " + std::to_string(cfg_.n_embed));
  return assemble_image_embeddings(global, tiles, grid, newline_, separator_);
}

}  // namespace folio
