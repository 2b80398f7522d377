// EXIF orientation: finding the tag in JPEG / PNG bytes and applying it like Pillow.
//
// Promises: exif_orientation() returns the value of tag 0x0112 from IFD0 of the first EXIF block
// (JPEG APP1 "Exif\0\0" segment or PNG eXIf chunk), or 1 when there is none or it is malformed:
// a broken EXIF block never makes an image unreadable (Pillow ignores it too). Values outside 1..8
// count as 1. apply_orientation() performs the Pillow transpose that ImageOps.exif_transpose
// picks for the value (2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise,
// 7 transverse, 8 rotate 90 counter-clockwise), so the result is the upright image.
#pragma once

#include <cstdint>
#include <span>

#include "doc/image.h"

namespace folio {

int exif_orientation(std::span<const uint8_t> file_bytes);

RgbImage apply_orientation(const RgbImage& image, int orientation);

}  // namespace folio
