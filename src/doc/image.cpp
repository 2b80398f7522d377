#include "doc/image.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/error.h"
#include "doc/exif_orientation.h"
#include "doc/jpeg_guard.h"
#include "doc/stb_image_impl.h"

namespace folio {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_invalid("cannot open image file '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw_invalid("cannot read image file '" + path + "'");
  return bytes;
}

// Width and height from a PNG IHDR or a JPEG SOFn header, read without stb_image: stb refuses
// very large images in its own header check with a generic message, and folio's size error must
// name the size. Returns false when the bytes are neither (stb_image then reports the problem).
bool header_size(std::span<const uint8_t> b, int& w, int& h) {
  auto be16 = [&](size_t p) { return (uint32_t(b[p]) << 8) | b[p + 1]; };
  auto be32 = [&](size_t p) { return (be16(p) << 16) | be16(p + 2); };
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() >= 24 && std::memcmp(b.data(), kPng, 8) == 0 && std::memcmp(b.data() + 12, "IHDR", 4) == 0) {
    const uint32_t pw = be32(16), ph = be32(20);
    w = static_cast<int>(std::min<uint32_t>(pw, INT32_MAX));
    h = static_cast<int>(std::min<uint32_t>(ph, INT32_MAX));
    return true;
  }
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return false;
  size_t p = 2;
  while (p + 4 <= b.size()) {
    if (b[p] != 0xFF) return false;
    while (p < b.size() && b[p] == 0xFF) ++p;
    if (p + 3 > b.size()) return false;
    const uint8_t m = b[p++];
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;
    if (m == 0xD9 || m == 0xDA) return false;
    const size_t len = be16(p);
    if (len < 2 || p + len > b.size()) return false;
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof && len >= 7) {
      h = static_cast<int>(be16(p + 3));
      w = static_cast<int>(be16(p + 5));
      return true;
    }
    p += len;
  }
  return false;
}

std::string stb_reason() {
  const char* r = stbi_failure_reason();
  return r ? r : "unknown error";
}

}  // namespace

void check_image_size(int width, int height, const std::string& source) {
  if (width < kMinImageSide || height < kMinImageSide || width > kMaxImageSide || height > kMaxImageSide) {
    throw_invalid("image '" + source + "' is " + std::to_string(width) + "x" + std::to_string(height) +
                  " pixels; each side must be between " + std::to_string(kMinImageSide) + " and " +
                  std::to_string(kMaxImageSide));
  }
}

RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& source) {
  FOLIO_CHECK_INPUT(!bytes.empty(), "image file '" + source + "' is empty");
  FOLIO_CHECK_INPUT(bytes.size() <= static_cast<size_t>(INT32_MAX), "image file '" + source + "' is larger than 2 GiB");
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int len = static_cast<int>(bytes.size());
  int w = 0, h = 0, comp = 0;
  // Header first: the size limit is enforced before stb_image allocates the pixel buffer.
  if (header_size(bytes, w, h)) check_image_size(w, h, source);
  check_jpeg_for_stb(bytes, source);  // a table that would overflow stb_image's (jpeg_guard.h)
  if (!stbi_info_from_memory(data, len, &w, &h, &comp)) {
    throw_invalid("cannot decode image '" + source + "' (PNG and JPEG are supported): " + stb_reason());
  }
  check_image_size(w, h, source);
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(data, len, &w, &h, &comp, 3), stbi_image_free);
  if (!px) throw_invalid("image '" + source + "' is corrupt: " + stb_reason());
  RgbImage img(w, h);
  std::memcpy(img.pixels.data(), px.get(), img.pixels.size());
  const int orientation = exif_orientation(bytes);
  return orientation == 1 ? img : apply_orientation(img, orientation);
}

RgbImage load_image(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  return decode_image(bytes, path);
}

}  // namespace folio
