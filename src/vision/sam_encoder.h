// SamEncoder: the SAM ViT-B image encoder of the DeepEncoder (`model.sam_model.*`), see
// docs/deepencoder.md section 2.
//
// pixels [3, S, S] (normalised, planar RGB) -> patch embedding (S/16)^2 tokens + absolute positions
// -> ViT blocks (windowed attention with zero padding to a multiple of the window, or global
// attention; decomposed relative positions) -> neck (1x1 conv, LN2d, 3x3 conv, LN2d) -> two
// stride-2 3x3 convs -> [(S/64)^2 tokens, 1024 channels].
//
// Everything runs in f32 on token-major (HWC) maps; weights are read in their stored dtype through
// kernels::matmul. Position tables for sizes other than the trained one are resized once per size
// and cached (forward is safe to call from one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace folio {

class SamEncoder {
 public:
  // A feature map stored token-major: token (y, x) is row y * side + x, `channels` values each.
  struct Output {
    std::vector<float> tokens;
    int64_t side = 0;
    int64_t channels = 0;
  };

  // Finds and shape-checks every `prefix` tensor the config implies (InvalidInput naming it).
  SamEncoder(const VisionConfig& cfg, VisionWeights& weights, const std::string& prefix = "model.sam_model.");

  // pixels: planar [3, size, size] f32. size must be a positive multiple of the patch size (16);
  // the official views are 1024 (global) and 640 (tiles).
  Output forward(const float* pixels, int64_t size, ThreadPool& pool) const;

  // Side of the output grid for an input of `size` pixels (1024 -> 16, 640 -> 10).
  int64_t output_side(int64_t size) const;

  // The arithmetic of the linears and attention products (kernels::GemmPrecision); F32 by default.
  // Not to be changed while forward runs.
  void set_precision(kernels::GemmPrecision p) { precision_ = p; }
  kernels::GemmPrecision precision() const { return precision_; }

 private:
  struct Block {
    bool global = false;
    std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b;
    const TensorView *qkv = nullptr, *proj = nullptr, *lin1 = nullptr, *lin2 = nullptr;
    std::vector<float> qkv_b, proj_b, lin1_b, lin2_b;
    std::vector<float> rel_h, rel_w;  // [2 * trained side - 1, head_dim]
  };

  // Activations of one block, allocated once per forward and reused by its blocks (fresh
  // multi-MiB buffers per block cost page faults and zeroing, ~4% of a 1024 view).
  struct BlockBuffers {
    std::vector<float> y, qkv, att;
    std::vector<int64_t> window_rows;  // windowed blocks' row r: token window_rows[r], or -1 (padding)
    kernels::MlpScratch hidden;
  };
  void run_block(int64_t index, float* x, int64_t G, BlockBuffers& buf, ThreadPool& pool) const;
  // Absolute position table for a G x G grid ([G * G, width]); resized and cached when G differs
  // from the trained grid.
  const std::vector<float>& pos_table(int64_t G) const;
  // Relative-position table of a block for a sequence side s ([2s - 1, head_dim]).
  const std::vector<float>& rel_table(int64_t block, bool height, int64_t s) const;

  VisionConfig cfg_;
  kernels::GemmPrecision precision_ = kernels::GemmPrecision::F32;
  int64_t pos_side_ = 0;  // trained grid side (image_size / patch)
  std::optional<kernels::ConvFilter> patch_;
  std::vector<float> patch_b_;
  std::vector<float> pos_;  // [pos_side^2, width]
  std::vector<Block> blocks_;
  std::optional<kernels::ConvFilter> neck0_, neck2_;
  std::vector<float> neck1_w_, neck1_b_, neck3_w_, neck3_b_;
  std::vector<kernels::ConvFilter> down_;  // net_2, net_3

  mutable std::mutex cache_mu_;
  mutable std::map<int64_t, std::vector<float>> pos_cache_;
  mutable std::map<std::tuple<int64_t, bool, int64_t>, std::vector<float>> rel_cache_;
};

}  // namespace folio
