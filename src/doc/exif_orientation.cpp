#include "doc/exif_orientation.h"

#include <cstring>
#include <string_view>

namespace folio {
namespace {

uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }

// Orientation from a TIFF structure (the payload of an EXIF block after "Exif\0\0").
int tiff_orientation(std::span<const uint8_t> t) {
  if (t.size() < 8) return 1;
  bool little;
  if (t[0] == 'I' && t[1] == 'I') {
    little = true;
  } else if (t[0] == 'M' && t[1] == 'M') {
    little = false;
  } else {
    return 1;
  }
  auto u16 = [&](size_t off) -> uint32_t {
    return little ? (uint32_t(t[off]) | (uint32_t(t[off + 1]) << 8)) : ((uint32_t(t[off]) << 8) | t[off + 1]);
  };
  auto u32 = [&](size_t off) -> uint32_t {
    return little ? (u16(off) | (u16(off + 2) << 16)) : ((u16(off) << 16) | u16(off + 2));
  };
  if (u16(2) != 42) return 1;
  const uint64_t ifd = u32(4);
  if (ifd + 2 > t.size()) return 1;
  const uint32_t entries = u16(ifd);
  for (uint32_t i = 0; i < entries; ++i) {
    const uint64_t e = ifd + 2 + uint64_t(i) * 12;
    if (e + 12 > t.size()) return 1;
    if (u16(e) != 0x0112) continue;
    const uint32_t type = u16(e + 2);
    uint32_t v = 0;
    if (type == 3) {
      v = u16(e + 8);  // SHORT: stored left-aligned in the 4-byte value field
    } else if (type == 4) {
      v = u32(e + 8);  // LONG (non-standard but seen in the wild)
    } else {
      return 1;
    }
    return (v >= 1 && v <= 8) ? static_cast<int>(v) : 1;
  }
  return 1;
}

int jpeg_orientation(std::span<const uint8_t> b) {
  size_t p = 2;  // after SOI
  while (p + 4 <= b.size()) {
    if (b[p] != 0xFF) return 1;
    while (p < b.size() && b[p] == 0xFF) ++p;  // fill bytes
    if (p + 3 > b.size()) return 1;
    const uint8_t marker = b[p++];
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) continue;  // no length
    if (marker == 0xDA || marker == 0xD9) return 1;  // image data starts: metadata is over
    const size_t len = (size_t(b[p]) << 8) | b[p + 1];
    if (len < 2 || p + len > b.size()) return 1;
    const uint8_t* seg = b.data() + p + 2;
    const size_t seg_len = len - 2;
    if (marker == 0xE1 && seg_len >= 6 && std::memcmp(seg, "Exif\0\0", 6) == 0) {
      return tiff_orientation({seg + 6, seg_len - 6});  // Pillow reads the first Exif block only
    }
    p += len;
  }
  return 1;
}

int png_orientation(std::span<const uint8_t> b) {
  size_t p = 8;  // after the signature
  while (p + 12 <= b.size()) {
    const uint64_t len = be32(b.data() + p);
    const std::string_view type(reinterpret_cast<const char*>(b.data() + p + 4), 4);
    if (p + 12 + len > b.size()) return 1;
    if (type == "eXIf") return tiff_orientation({b.data() + p + 8, static_cast<size_t>(len)});
    if (type == "IEND") return 1;
    p += 12 + len;
  }
  return 1;
}

}  // namespace

int exif_orientation(std::span<const uint8_t> b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return jpeg_orientation(b);
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return png_orientation(b);
  return 1;
}

RgbImage apply_orientation(const RgbImage& in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int W = in.width, H = in.height;
  const bool swap = orientation >= 5;  // 5..8 exchange width and height
  RgbImage out(swap ? H : W, swap ? W : H);
  for (int y = 0; y < out.height; ++y) {
    uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      // Source pixel (sx, sy) of output pixel (x, y) for each Pillow transpose.
      int sx = x, sy = y;
      switch (orientation) {
        case 2: sx = W - 1 - x; sy = y; break;          // FLIP_LEFT_RIGHT
        case 3: sx = W - 1 - x; sy = H - 1 - y; break;  // ROTATE_180
        case 4: sx = x; sy = H - 1 - y; break;          // FLIP_TOP_BOTTOM
        case 5: sx = y; sy = x; break;                  // TRANSPOSE
        case 6: sx = y; sy = H - 1 - x; break;          // ROTATE_270 (90 degrees clockwise)
        case 7: sx = W - 1 - y; sy = H - 1 - x; break;  // TRANSVERSE
        case 8: sx = W - 1 - y; sy = x; break;          // ROTATE_90 (counter-clockwise)
      }
      const uint8_t* src = in.row(sy) + static_cast<size_t>(sx) * 3;
      dst[3 * x] = src[0];
      dst[3 * x + 1] = src[1];
      dst[3 * x + 2] = src[2];
    }
  }
  return out;
}

}  // namespace folio
