// Float resizes of learned position tables, matching PyTorch's F.interpolate (align_corners=False),
// which is how the official vision code adapts tables trained at one size to another input size.
#pragma once

#include <cstdint>

namespace folio::kernels {

// Antialiased bicubic resize (F.interpolate(mode="bicubic", antialias=True)) of a C-channel image
// stored HWC ([H, W, C], channels contiguous) to [Ho, Wo, C]. Per axis: scale = in / out (float),
// support = 2 * scale when shrinking (the kernel widens: antialiasing) else 2, the Keys cubic with
// a = -0.5, taps outside the image dropped and the remaining weights renormalised. The width axis is
// resized first, then the height; float accumulation throughout.
void resize_bicubic_aa_hwc(const float* in, int64_t H, int64_t W, int64_t C, float* out, int64_t Ho, int64_t Wo);

// 1-D linear resize (F.interpolate(mode="linear")) along the rows of a [L, C] table to [Lo, C]:
// src = max(scale * (i + 0.5) - 0.5, 0) with scale = L / Lo, blend of rows floor(src) and the next
// (clamped to the last row). Used for SAM's relative-position tables.
void resize_linear_rows(const float* in, int64_t L, int64_t C, float* out, int64_t Lo);

}  // namespace folio::kernels
