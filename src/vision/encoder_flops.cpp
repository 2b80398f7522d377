#include "vision/encoder_flops.h"

#include <string>

#include "core/error.h"
#include "kernels/cpu/conv2d.h"

namespace folio {

namespace {

double linear(double rows, int64_t in, int64_t out) { return 2.0 * rows * static_cast<double>(in * out); }

// Both attention products over `seqs` sequences of T tokens.
double attention(double seqs, int64_t T, int64_t width) {
  return 4.0 * seqs * static_cast<double>(T) * static_cast<double>(T) * static_cast<double>(width);
}

double conv(int64_t out_side, int64_t in_ch, int64_t out_ch, int64_t k) {
  return linear(static_cast<double>(out_side * out_side), in_ch * k * k, out_ch);
}

double sam_flops(const VisionConfig& c, int64_t size) {
  const int64_t G = size / c.sam_patch, T = G * G, D = c.sam_width, ws = c.sam_window;
  const int64_t windows = (G + ws - 1) / ws, padded = windows * windows * ws * ws;
  double f = conv(G, 3, D, c.sam_patch);
  for (int64_t b = 0; b < c.sam_layers; ++b) {
    const bool global = c.sam_is_global(b);
    const double rows = static_cast<double>(global ? T : padded);
    f += linear(rows, D, 3 * D) + linear(rows, D, D);
    f += global ? attention(1, T, D) : attention(static_cast<double>(windows * windows), ws * ws, D);
    f += linear(static_cast<double>(T), D, c.sam_mlp) + linear(static_cast<double>(T), c.sam_mlp, D);
  }
  f += conv(G, D, c.sam_neck, 1) + conv(G, c.sam_neck, c.sam_neck, 3);
  int64_t side = G, in = c.sam_neck;
  for (int64_t out : c.sam_downsample) {
    side = kernels::conv_out_size(side, 3, 2, 1);
    f += conv(side, in, out, 3);
    in = out;
  }
  return f;
}

}  // namespace

EncoderFlops encoder_view_flops(const VisionConfig& c, int64_t size) {
  FOLIO_CHECK_INPUT(size > 0 && size % c.sam_patch == 0,
                    "encoder FLOPs: view size " + std::to_string(size) + " is not a positive multiple of the patch size " +
                        std::to_string(c.sam_patch));
  int64_t side = size / c.sam_patch;
  for (size_t i = 0; i < c.sam_downsample.size(); ++i) side = kernels::conv_out_size(side, 3, 2, 1);
  const int64_t N = side * side, T = 1 + N, D = c.clip_width;
  EncoderFlops f;
  f.sam = sam_flops(c, size);
  f.clip = static_cast<double>(c.clip_layers) *
           (linear(T, D, 3 * D) + linear(T, D, D) + attention(1, T, D) + linear(T, D, c.clip_mlp) + linear(T, c.clip_mlp, D));
  f.projector = linear(static_cast<double>(N), c.clip_width + c.sam_channels(), c.n_embed);
  return f;
}

}  // namespace folio
