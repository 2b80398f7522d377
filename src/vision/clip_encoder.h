// ClipEncoder: the CLIP-L/14 transformer of the DeepEncoder (`model.vision_model.*`), see
// docs/deepencoder.md section 3. Its patch tokens are SAM's output features (CLIP's own
// patch-embedding convolution is never run): [CLS] + tokens, + positions, pre-LayerNorm, pre-norm
// layers with quick_gelu MLPs, no final norm.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace folio {

class ClipEncoder {
 public:
  ClipEncoder(const VisionConfig& cfg, VisionWeights& weights, const std::string& prefix = "model.vision_model.");

  // tokens: [side * side, width] (row-major grid, the SAM output). Returns [1 + side^2, width] with
  // the CLS row first. Position embeddings for a side other than the trained one (16) are resized
  // (antialiased bicubic) once per side and cached.
  std::vector<float> forward(const float* tokens, int64_t side, ThreadPool& pool) const;

  // Tensors that exist in checkpoints but are never read (CLIP's pixel patch embedding and the
  // position-id buffer).
  static std::vector<std::string> unused_tensor_names(const std::string& prefix = "model.vision_model.");

  // The arithmetic of the linears and attention products (kernels::GemmPrecision); F32 by default.
  // Not to be changed while forward runs.
  void set_precision(kernels::GemmPrecision p) { precision_ = p; }
  kernels::GemmPrecision precision() const { return precision_; }

 private:
  struct Layer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
    const TensorView *qkv = nullptr, *out = nullptr, *fc1 = nullptr, *fc2 = nullptr;
    std::vector<float> qkv_b, out_b, fc1_b, fc2_b;
  };
  // [side^2, width] patch position rows for a side x side grid.
  const std::vector<float>& patch_positions(int64_t side) const;

  VisionConfig cfg_;
  kernels::GemmPrecision precision_ = kernels::GemmPrecision::F32;
  int64_t pos_side_ = 0;
  std::vector<float> cls_;       // [width]
  std::vector<float> pos_cls_;   // position row 0
  std::vector<float> pos_grid_;  // rows 1.. as [pos_side^2, width]
  std::vector<float> pre_w_, pre_b_;
  std::vector<Layer> layers_;

  mutable std::mutex cache_mu_;
  mutable std::map<int64_t, std::vector<float>> pos_cache_;
};

}  // namespace folio
