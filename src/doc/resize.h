// Pillow-compatible BICUBIC resize of 8-bit RGB images.
//
// Promises: bit-identical bytes to Pillow's Image.resize(size, Image.BICUBIC) for RGB images
// (libImaging/Resample.c, same in Pillow 9.4 and current releases), which the official
// Unlimited-OCR preprocessing uses for both the padded global view and the Gundam tiles:
//  - separable: horizontal pass first, then vertical; a pass whose length does not change is
//    skipped; the intermediate image is rounded and clipped to uint8 between the passes;
//  - Keys cubic with a = -0.5; when shrinking the kernel is widened by the scale (antialiasing);
//    taps outside the image are dropped and the remaining weights renormalised;
//  - weights in 22-bit fixed point, accumulated in int32 with a rounding bias of 2^21.
// Same size in and out returns a copy. Sizes must be positive (InvalidInput otherwise).
#pragma once

#include "doc/image.h"

namespace folio {

RgbImage resize_bicubic(const RgbImage& image, int width, int height);

}  // namespace folio
