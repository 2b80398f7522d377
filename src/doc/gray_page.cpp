#include "doc/gray_page.h"

#include <cstdint>

#include "doc/resize.h"

namespace folio {

void pillow_luma(const uint8_t* rgb, size_t n, uint8_t* gray) {
  for (size_t i = 0; i < n; ++i, rgb += 3) {
    // Pillow's L = R * 299/1000 + G * 587/1000 + B * 114/1000 in 16-bit fixed point, rounded.
    gray[i] = static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
  }
}

std::vector<uint8_t> gray_bytes(const RgbImage& image) {
  std::vector<uint8_t> out(static_cast<size_t>(image.width) * image.height);
  pillow_luma(image.pixels.data(), out.size(), out.data());
  return out;
}

GrayImage gray_image(const RgbImage& image) {
  GrayImage out;
  out.width = image.width, out.height = image.height;
  out.pixels = gray_bytes(image);
  return out;
}

std::vector<float> gray_page(const RgbImage& image, int width, int height) {
  const std::vector<uint8_t> bytes =
      gray_bytes((image.width == width && image.height == height) ? image : resize_bicubic(image, width, height));
  std::vector<float> out(bytes.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(bytes[i]) / 255.0f;
  return out;
}

}  // namespace folio
