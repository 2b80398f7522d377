// write_png: saves an RGB image as PNG (stb_image_write), for tools that read pages from files
// (the tesseract baseline of `folio bench accuracy`). Throws Io naming the path on failure.
// encode_png: the same PNG bytes in memory (a page shown to a client); InvalidInput for an empty image.
#pragma once

#include <string>

#include "doc/image.h"

namespace folio {

void write_png(const RgbImage& image, const std::string& path);
std::string encode_png(const RgbImage& image);

}  // namespace folio
