// gray_page: a page image as the mini OCR model reads it: resized to the model's page size and
// converted to gray values in [0, 1].
//
// Promises: the gray value is Pillow's Image.convert("L") of the (resized) RGB pixel (ITU-R 601-2
// luma in 16-bit fixed point, rounded), divided by 255, so an image saved as "L" by the training
// generator comes back exactly; resizing is the Pillow-exact bicubic of resize.h, done only when the
// size differs.
#pragma once

#include <cstdint>
#include <vector>

#include "doc/image.h"

namespace folio {

// [height * width] row-major values in [0, 1].
std::vector<float> gray_page(const RgbImage& image, int width, int height);

// Pillow's convert("L") of n RGB pixels into n bytes.
void pillow_luma(const uint8_t* rgb, size_t n, uint8_t* gray);

// The image at its own size as Pillow's convert("L") bytes ([height * width], 255 = white).
std::vector<uint8_t> gray_bytes(const RgbImage& image);
GrayImage gray_image(const RgbImage& image);

}  // namespace folio
