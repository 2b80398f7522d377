#include "doc/image_write.h"

#include "core/error.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace folio {

void write_png(const RgbImage& image, const std::string& path) {
  FOLIO_CHECK_INPUT(image.width > 0 && image.height > 0, "write_png: empty image for '" + path + "'");
  if (!stbi_write_png(path.c_str(), image.width, image.height, 3, image.pixels.data(), image.width * 3))
    throw Error(Error::Kind::Io, "cannot write PNG '" + path + "'");
}

std::string encode_png(const RgbImage& image) {
  FOLIO_CHECK_INPUT(image.width > 0 && image.height > 0, "encode_png: empty image");
  std::string out;
  auto append = [](void* context, void* data, int size) { static_cast<std::string*>(context)->append(static_cast<const char*>(data), size); };
  if (!stbi_write_png_to_func(append, &out, image.width, image.height, 3, image.pixels.data(), image.width * 3))
    throw Error(Error::Kind::Internal, "encode_png: stb_image_write failed");
  return out;
}

}  // namespace folio
