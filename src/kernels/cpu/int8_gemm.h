// Integer matrix products for small convolutional and 1-D networks (folio-mini-ocr 2's line
// recognizer): activations in 7 bits, weights in 8 bits, exact 32-bit sums.
//
//   y[r, o] = (sum_k a[r, k] * q[o, k]) * a_scale * w.scales[o] + bias[o]
//
// Promises:
//  - the integer sums are exact (|a| <= 127 and |q| <= 127, so the AVX2 path's pairwise 16-bit sums
//    never saturate), and the float epilogue is one shared scalar loop: every ISA (scalar, AVX2,
//    AVX-512, AVX-512 VNNI) gives the same bits, and so does any split of the rows between calls;
//  - single-threaded: callers run independent products on their own threads (the recognizer reads
//    one line per thread). Thread-safe for concurrent calls on shared weights.
// Why 7-bit activations: they are ReLU outputs (>= 0), so one scale per tensor loses one bit only,
// and u8 x s8 products then sum in pairs without saturating on AVX2's maddubs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio::kernels {

// Weights [out, in] quantised per output row: scale = max |row| / 127, codes round(w / scale).
// Laid out for gemm_int8 in panels of 16 rows: panel p holds, for each group of 4 inputs g, the 4
// codes of rows 16p .. 16p + 15 (64 bytes), rows past `out` zero.
struct Int8Weights {
  int64_t out = 0, in = 0;
  std::vector<float> scales;   // [out]; 0 for an all-zero row
  std::vector<int8_t> panels;  // [ceil(out / 16)][in / 4][16][4]

  int64_t panel_count() const { return (out + 15) / 16; }
  // w: [out, in] row-major f32. Throws InvalidInput if in is not a positive multiple of 4 or out < 1.
  static Int8Weights quantize(const float* w, int64_t out, int64_t in);
};

// q[i] = max(x[i], 0) / scale rounded half up, in 0..127, with scale = max(x) / 127; returns the scale
// (1, and q all zero, when no x[i] is positive or the largest is not finite). Negative values are clamped to 0 (callers pass ReLU
// outputs).
float quantize_u7(const float* x, int64_t n, uint8_t* q);

// y [n, w.out] as above; a [n, w.in] with every value <= 127 (quantize_u7's codes); bias [w.out]
// or null. y must not overlap a.
void gemm_int8(const uint8_t* a, int64_t n, float a_scale, const Int8Weights& w, const float* bias, float* y);

// The same where row r's w.in inputs are tap_offsets.size() runs of equal length (a multiple of 4),
// run t starting at a + r * lda + tap_offsets[t]: a convolution read straight from its zero-padded
// input, without an im2col copy (weights' input order: tap-major). InvalidInput if the taps cannot
// split w.in so, or n < 0.
void gemm_int8_taps(const uint8_t* a, int64_t n, int64_t lda, std::span<const int64_t> tap_offsets, float a_scale,
                    const Int8Weights& w, const float* bias, float* y);

}  // namespace folio::kernels
