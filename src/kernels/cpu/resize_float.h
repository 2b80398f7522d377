// Pillow-compatible BILINEAR resize of float ("F" mode) images: what the folio-mini-ocr 2 line
// crops go through in training (tools/train/mini2/lines.py, Image.resize(..., Image.BILINEAR) on a
// float32 array).
//
// Promises: the same values as Pillow's 32-bit-per-channel resampling (libImaging/Resample.c, 9.4 and
// current releases), which this mirrors step for step:
//  - separable: horizontal pass first, then vertical; a pass whose length does not change is skipped;
//  - triangle filter of support 1, widened by the scale when shrinking (antialiasing); taps outside
//    the image dropped and the remaining weights renormalised;
//  - weights and sums in double, each output stored as float (so the intermediate image is float).
// Sizes must be positive (InvalidInput otherwise). Pure function; thread-safe.
#pragma once

#include <vector>

namespace folio {

// in: [in_h, in_w] row-major. Returns [out_h, out_w] row-major.
std::vector<float> resize_bilinear_f32(const std::vector<float>& in, int in_w, int in_h, int out_w, int out_h);

}  // namespace folio
