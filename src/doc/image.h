// RgbImage and image-file input (PNG, JPEG).
//
// Promises: every image leaves here as 8-bit RGB, row-major, no padding between rows, exactly as
// the official Unlimited-OCR loader sees it after Pillow's ImageOps.exif_transpose + convert("RGB"):
//  - the EXIF orientation tag (JPEG APP1 "Exif", PNG eXIf chunk) is applied (stb_image ignores
//    EXIF, so folio parses the tag itself: exif_orientation.h);
//  - greyscale is replicated into R = G = B, palettes are expanded, an alpha channel is dropped
//    (never composited: a transparent pixel keeps the RGB it stores);
//  - 16-bit PNGs keep the high byte of each sample (stb_image). Pillow does the same for 16-bit
//    RGB(A) but clips 16-bit greyscale to 255, so 16-bit grey PNGs differ from the official path.
// Every bad file is Error InvalidInput naming the file: unreadable, not PNG/JPEG, corrupt, or a side
// outside [kMinImageSide, kMaxImageSide]. The size is checked from the header before any pixel
// buffer is allocated, so a 20000 x 20000 PNG is refused without decoding it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace folio {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3, R G B

  RgbImage() = default;
  RgbImage(int w, int h) : width(w), height(h), pixels(static_cast<size_t>(w) * h * 3) {}
  RgbImage(int w, int h, uint8_t fill) : width(w), height(h), pixels(static_cast<size_t>(w) * h * 3, fill) {}

  uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * width * 3; }
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * width * 3; }
  uint8_t at(int x, int y, int c) const { return pixels[(static_cast<size_t>(y) * width + x) * 3 + c]; }
};

// A page in gray, one byte a pixel (255 = white).
struct GrayImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height

  GrayImage() = default;
  GrayImage(int w, int h) : width(w), height(h), pixels(static_cast<size_t>(w) * h) {}

  uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * width; }
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * width; }
};

// Smallest and largest accepted side of a page image, in pixels (both inclusive).
inline constexpr int kMinImageSide = 2;
inline constexpr int kMaxImageSide = 16384;

// Throws InvalidInput naming `source` unless both sides are within [kMinImageSide, kMaxImageSide].
void check_image_size(int width, int height, const std::string& source);

// Decodes a PNG or JPEG file (see the promises above).
RgbImage load_image(const std::string& path);

// Same for bytes already in memory; `source` names them in errors.
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace folio
