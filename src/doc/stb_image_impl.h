// The one configuration of stb_image folio uses: PNG and JPEG only, decoding from memory only.
// Marked as a system header so the third-party code is compiled without folio's warning flags.
// Include this everywhere stb_image is needed; exactly one .cpp (stb_image_impl.cpp) defines
// STB_IMAGE_IMPLEMENTATION before including it.
#pragma once
#pragma GCC system_header

#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#include <stb_image.h>
