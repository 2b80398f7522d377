// DeepEncoder: pixels of one view -> projected image features, and a page's views -> the rows of
// image embeddings the decoder reads at its image placeholder positions (docs/deepencoder.md).
//
//   encode_view: SAM ([S/64]^2 x 1024) -> CLIP over the SAM tokens -> concat [CLIP (no CLS) | SAM]
//                -> projector Linear(2048 -> n_embed)
//   assemble:    local tiles (stitched grid) + newlines, global view + newlines, separator
//
// Weights are read by their official names (model.sam_model.*, model.vision_model.*,
// model.projector.layers.*, model.image_newline, model.view_seperator) from any TensorSource, in any
// float dtype; activations are f32. One view is encoded at a time, so memory is bounded by the
// largest view (a 1024 view of the real model needs ~0.3 GB of activations).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/tensor_source.h"
#include "vision/clip_encoder.h"
#include "vision/image_assembly.h"
#include "vision/sam_encoder.h"
#include "vision/vision_config.h"

namespace folio {

class DeepEncoder {
 public:
  // Finds and shape-checks every vision tensor the config implies; a missing or mis-shaped tensor,
  // or a tensor under a vision prefix that this config does not use (e.g. a 13th SAM block), is an
  // InvalidInput error naming it. `weights` must outlive the encoder.
  DeepEncoder(const VisionConfig& config, const TensorSource& weights);

  const VisionConfig& config() const { return cfg_; }

  // The arithmetic of every linear and attention product of SAM, CLIP and the projector
  // (kernels::GemmPrecision). F32 by default; Bf16 is about twice as fast where the CPU has
  // AVX512-BF16 (elsewhere it runs F32). Not to be changed while a view is being encoded.
  void set_precision(kernels::GemmPrecision p);
  // The precision the products run in: F32 after set_precision(Bf16) on a CPU without AVX512-BF16.
  kernels::GemmPrecision precision() const { return precision_; }

  // One view: planar normalised pixels [3, size, size] (size 1024 for the global view, 640 for a
  // tile; any positive multiple of 16 works) -> [(size/64)^2, n_embed] features.
  ViewFeatures encode_view(const float* pixels, int64_t size, ThreadPool& pool) const;

  // The stages of encode_view, for tests and diagnostics.
  SamEncoder::Output sam(const float* pixels, int64_t size, ThreadPool& pool) const;
  // [1 + side^2, clip width], CLS row first.
  std::vector<float> clip(const SamEncoder::Output& sam_out, ThreadPool& pool) const;
  // clip_out: [1 + N, clip width] (CLS row skipped); sam_tokens: [N, SAM channels] -> [N, n_embed].
  std::vector<float> project(const float* clip_out, const float* sam_tokens, int64_t n, ThreadPool& pool) const;

  // A page's image embedding rows (see image_assembly.h).
  std::vector<float> assemble(const ViewFeatures& global, std::span<const ViewFeatures> tiles, TileLayout grid) const;

  std::span<const float> image_newline() const { return newline_; }
  std::span<const float> view_separator() const { return separator_; }

 private:
  VisionConfig cfg_;
  kernels::GemmPrecision precision_ = kernels::GemmPrecision::F32;
  std::unique_ptr<SamEncoder> sam_;
  std::unique_ptr<ClipEncoder> clip_;
  const TensorView* proj_w_ = nullptr;
  std::vector<float> proj_b_;
  std::vector<float> newline_, separator_;
};

}  // namespace folio
