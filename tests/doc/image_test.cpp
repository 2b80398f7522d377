#include "doc/image.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "doc/exif_orientation.h"
#include "doc_test_util.h"

namespace folio {
namespace {

using doc_test::expect_invalid;
using doc_test::fixture;

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Every PNG fixture decodes to exactly what Pillow's exif_transpose + convert("RGB") gives.
TEST(Image, MatchesPillowForOrientationAlphaGreyAndPalette) {
  const nlohmann::json expected = doc_test::read_json(fixture("images.json"));
  ASSERT_EQ(expected.size(), 12u);
  for (const auto& [name, want] : expected.items()) {
    SCOPED_TRACE(name);
    const RgbImage img = load_image(fixture(name));
    ASSERT_EQ(img.width, want["width"].get<int>());
    ASSERT_EQ(img.height, want["height"].get<int>());
    EXPECT_EQ(img.pixels, want["rgb"].get<std::vector<uint8_t>>());
  }
}

TEST(Image, ReadsOrientationTagFromPngAndJpeg) {
  for (int k = 1; k <= 8; ++k) {
    EXPECT_EQ(exif_orientation(file_bytes(fixture("orient_" + std::to_string(k) + ".png"))), k);
  }
  EXPECT_EQ(exif_orientation(file_bytes(fixture("quadrants_orient6.jpg"))), 6);
  EXPECT_EQ(exif_orientation(file_bytes(fixture("quadrants.jpg"))), 1);
  EXPECT_EQ(exif_orientation(file_bytes(fixture("rgba.png"))), 1);
  // Malformed EXIF blocks are ignored, never fatal.
  std::vector<uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x0A, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 0xFF, 0xD9};
  EXPECT_EQ(exif_orientation(jpeg), 1);
  EXPECT_EQ(exif_orientation(std::vector<uint8_t>{}), 1);
}

// Each orientation against an independent statement of where the top-left source pixel goes.
TEST(Image, ApplyOrientationMovesCornersLikePillow) {
  const RgbImage src = doc_test::pattern_image(4, 3);
  // Upright position (x, y) of source pixel (0, 0) for each orientation.
  const int corner[9][2] = {{0, 0}, {0, 0}, {3, 0}, {3, 2}, {0, 2}, {0, 0}, {2, 0}, {2, 3}, {0, 3}};
  for (int k = 1; k <= 8; ++k) {
    const RgbImage out = apply_orientation(src, k);
    EXPECT_EQ(out.width, k >= 5 ? 3 : 4);
    EXPECT_EQ(out.height, k >= 5 ? 4 : 3);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out.at(corner[k][0], corner[k][1], c), src.at(0, 0, c)) << "orientation " << k;
  }
}

TEST(Image, JpegWithOrientation6IsRotatedClockwise) {
  const RgbImage plain = load_image(fixture("quadrants.jpg"));
  ASSERT_EQ(plain.width, 64);
  ASSERT_EQ(plain.height, 32);
  const RgbImage img = load_image(fixture("quadrants_orient6.jpg"));
  ASSERT_EQ(img.width, 32);
  ASSERT_EQ(img.height, 64);
  // Source quadrants: red top-left, green top-right, blue bottom-left, white bottom-right.
  // Rotated 90 degrees clockwise: blue top-left, red top-right, white bottom-left, green bottom-right.
  auto near = [&](int x, int y, int r, int g, int b) {
    EXPECT_NEAR(img.at(x, y, 0), r, 12) << x << "," << y;
    EXPECT_NEAR(img.at(x, y, 1), g, 12) << x << "," << y;
    EXPECT_NEAR(img.at(x, y, 2), b, 12) << x << "," << y;
  };
  near(8, 16, 0, 0, 255);
  near(24, 16, 255, 0, 0);
  near(8, 48, 255, 255, 255);
  near(24, 48, 0, 255, 0);
}

TEST(Image, RejectsTooSmallAndTooLargeImagesNamingTheFile) {
  expect_invalid([] { load_image(fixture("one_pixel.png")); }, {"one_pixel.png", "1x1", "between 2 and 16384"});
  // The header claims 20000 x 20000 and there is no pixel data: the size check must come first.
  expect_invalid([] { load_image(fixture("huge_header.png")); }, {"huge_header.png", "20000x20000"});
  // Same for a JPEG whose SOF0 header claims 30000 x 20000 (no scan data follows).
  const std::vector<uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 8, 0x4E, 0x20, 0x75, 0x30, 3,
                                     1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0, 0xFF, 0xD9};
  expect_invalid([&] { decode_image(jpeg, "big.jpg"); }, {"big.jpg", "30000x20000"});
  expect_invalid([] { check_image_size(16385, 100, "x.png"); }, {"x.png", "16385x100"});
  EXPECT_NO_THROW(check_image_size(16384, 2, "x.png"));
}

TEST(Image, RejectsUnreadableAndCorruptFilesNamingThem) {
  expect_invalid([] { load_image(fixture("no_such_file.png")); }, {"no_such_file.png", "cannot open"});
  expect_invalid([] { load_image(fixture("garbage.png")); }, {"garbage.png", "cannot decode"});
  expect_invalid([] { load_image(fixture("truncated.png")); }, {"truncated.png", "corrupt"});
  expect_invalid([] { load_image(fixture("empty.png")); }, {"empty.png", "empty"});
  expect_invalid([] { load_image(fixture("two_pages.pdf")); }, {"two_pages.pdf"});
}

}  // namespace
}  // namespace folio
