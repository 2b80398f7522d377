// The floating-point work of one DeepEncoder view, counted from its sizes: what `folio bench
// encode` divides by the time to report GFLOP/s against the machine's sgemm peak.
//
// A multiply-add counts 2. Counted: every linear and convolution (the patch embedding, the SAM
// blocks' qkv / proj / MLP, the neck and the two downsampling convolutions, CLIP's layers, the
// projector) and attention's two products (q.k and p.v: 4 x head_dim per query and key it sees),
// windowed SAM blocks over their zero-padded windows, since those are computed. Not counted:
// norms, activations, softmax and the relative-position terms (a few percent together), which is
// why the figure is a floor on the work done.
#pragma once

#include <cstdint>

#include "vision/vision_config.h"

namespace folio {

struct EncoderFlops {
  double sam = 0;        // patch embedding, blocks, neck, downsampling
  double clip = 0;       // CLIP over SAM's tokens (plus CLS)
  double projector = 0;  // Linear(clip + SAM channels -> n_embed)
  double total() const { return sam + clip + projector; }
};

// size: the view's side in pixels (1024 global, 640 tile); a positive multiple of the SAM patch.
// Throws InvalidInput otherwise.
EncoderFlops encoder_view_flops(const VisionConfig& config, int64_t size);

}  // namespace folio
