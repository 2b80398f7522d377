// Helpers shared by the tests of src/doc.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "doc/image.h"

namespace folio::doc_test {

inline std::string fixture(const std::string& name) { return std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/doc/" + name; }

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return nlohmann::json::parse(f);
}

// The synthetic test pattern of tools/fixtures/doc_make_fixtures.py pattern(): edges, gradients
// and high-frequency content, identical in Python and here.
inline RgbImage pattern_image(int w, int h) {
  RgbImage img(w, h);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t v = ((x * (3 + c)) ^ (y * (5 + 2 * c))) + ((x / 7 + y / 5) % 2) * 97 + (x * y) % 251;
        img.pixels[(y * w + x) * 3 + c] = static_cast<uint8_t>(v & 255);
      }
    }
  }
  return img;
}

// zlib's CRC-32 (what Python's zlib.crc32 computes), written out so the tests need no zlib.
inline uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0) {
  static uint32_t table[256];
  static bool init = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)init;
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

inline uint32_t crc32(const RgbImage& img) { return crc32(img.pixels.data(), img.pixels.size()); }

// Runs fn and expects Error InvalidInput whose message contains every one of `parts`.
inline void expect_invalid(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected InvalidInput mentioning '" << *parts.begin() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput) << e.what();
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  }
}

}  // namespace folio::doc_test
