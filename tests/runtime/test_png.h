// A minimal PNG writer for tests: 8-bit RGB, stored (uncompressed) deflate blocks, so any size can
// be written without a compression library; and a header-only PNG that claims any size (what a
// decompression bomb looks like to a reader that checks sizes first).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace folio::testing {

inline uint32_t png_crc(const uint8_t* p, size_t n, uint32_t c = 0xffffffffu) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t x = i;
      for (int k = 0; k < 8; ++k) x = (x & 1) ? 0xedb88320u ^ (x >> 1) : x >> 1;
      t[i] = x;
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

inline void png_put32(std::vector<uint8_t>& o, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) o.push_back(static_cast<uint8_t>(v >> s));
}

inline void png_chunk(std::vector<uint8_t>& o, const char* type, const std::vector<uint8_t>& data) {
  png_put32(o, static_cast<uint32_t>(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  o.insert(o.end(), body.begin(), body.end());
  png_put32(o, png_crc(body.data(), body.size()) ^ 0xffffffffu);
}

inline std::vector<uint8_t> png_ihdr(uint32_t w, uint32_t h) {
  std::vector<uint8_t> d;
  png_put32(d, w);
  png_put32(d, h);
  d.insert(d.end(), {8, 2, 0, 0, 0});  // 8-bit, RGB, deflate, no filter, no interlace
  return d;
}

// rgb: w * h * 3 bytes.
inline void write_png(const std::string& path, uint32_t w, uint32_t h, const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> raw;
  raw.reserve(static_cast<size_t>(h) * (1 + 3 * w));
  for (uint32_t y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), rgb.begin() + static_cast<size_t>(y) * 3 * w, rgb.begin() + static_cast<size_t>(y + 1) * 3 * w);
  }
  std::vector<uint8_t> z = {0x78, 0x01};
  for (size_t i = 0; i < raw.size() || i == 0; i += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - i);
    z.push_back(i + n >= raw.size() ? 1 : 0);
    z.push_back(static_cast<uint8_t>(n));
    z.push_back(static_cast<uint8_t>(n >> 8));
    z.push_back(static_cast<uint8_t>(~n));
    z.push_back(static_cast<uint8_t>(~n >> 8));
    z.insert(z.end(), raw.begin() + i, raw.begin() + i + n);
    if (raw.empty()) break;
  }
  uint32_t a = 1, b = 0;
  for (uint8_t c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  png_put32(z, (b << 16) | a);
  std::vector<uint8_t> o = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  png_chunk(o, "IHDR", png_ihdr(w, h));
  png_chunk(o, "IDAT", z);
  png_chunk(o, "IEND", {});
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(o.data()), static_cast<std::streamsize>(o.size()));
}

// A PNG whose header says w x h but which carries no pixel data.
inline void write_png_header_only(const std::string& path, uint32_t w, uint32_t h) {
  std::vector<uint8_t> o = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  png_chunk(o, "IHDR", png_ihdr(w, h));
  png_chunk(o, "IEND", {});
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(o.data()), static_cast<std::streamsize>(o.size()));
}

// A deterministic page-like test image: light background, dark bars.
inline std::vector<uint8_t> test_page_rgb(uint32_t w, uint32_t h, uint32_t seed) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3, 240);
  uint32_t s = seed * 2654435761u + 1;
  for (uint32_t y = 8; y + 8 < h; y += 24) {
    s = s * 1664525u + 1013904223u;
    const uint32_t len = w / 8 + (s >> 8) % (w * 3 / 4);
    for (uint32_t yy = y; yy < y + 10; ++yy)
      for (uint32_t x = w / 16; x < std::min(w, w / 16 + len); ++x)
        for (int c = 0; c < 3; ++c) px[(static_cast<size_t>(yy) * w + x) * 3 + c] = static_cast<uint8_t>((x * 7 + yy * 3 + c * 50 + seed) % 90);
  }
  return px;
}

}  // namespace folio::testing
