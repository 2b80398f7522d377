#include "doc/preprocess.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <iterator>

#include "doc/resize.h"
#include "doc_test_util.h"

namespace folio {
namespace {

using doc_test::crc32;
using doc_test::fixture;
using doc_test::pattern_image;

const nlohmann::json& golden() {
  static const nlohmann::json j = doc_test::read_json(fixture("preprocess_golden.json"));
  return j;
}

const std::vector<uint8_t>& golden_bytes() {
  static const std::vector<uint8_t> b = [] {
    std::ifstream f(fixture("preprocess_golden.bin"), std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }();
  return b;
}

// Bit-exact against Pillow's Image.resize(BICUBIC): shrinking, enlarging, one axis only.
TEST(Resize, BitExactAgainstPillow) {
  int exact = 0;
  for (const auto& c : golden()["resize"]) {
    const int sw = c["src"][0], sh = c["src"][1], tw = c["dst"][0], th = c["dst"][1];
    SCOPED_TRACE(std::to_string(sw) + "x" + std::to_string(sh) + " -> " + std::to_string(tw) + "x" + std::to_string(th));
    const RgbImage out = resize_bicubic(pattern_image(sw, sh), tw, th);
    ASSERT_EQ(out.width, tw);
    ASSERT_EQ(out.height, th);
    if (c.contains("offset")) {
      const size_t off = c["offset"], len = c["length"];
      ASSERT_EQ(len, out.pixels.size());
      const std::vector<uint8_t> want(golden_bytes().begin() + off, golden_bytes().begin() + off + len);
      size_t diff = 0;
      for (size_t i = 0; i < len; ++i) diff += want[i] != out.pixels[i];
      EXPECT_EQ(diff, 0u) << "bytes differing from Pillow";
      ++exact;
    }
    EXPECT_EQ(crc32(out), c["crc32"].get<uint32_t>());
  }
  EXPECT_GE(exact, 5);
}

TEST(Resize, SameSizeIsACopyAndBadSizesAreRejected) {
  const RgbImage src = pattern_image(9, 7);
  EXPECT_EQ(resize_bicubic(src, 9, 7).pixels, src.pixels);
  doc_test::expect_invalid([&] { resize_bicubic(src, 0, 5); }, {"0x5"});
}

// Independent float re-implementation of the spec's formula (no fixed point): Pillow's result
// must be within one level of it everywhere.
TEST(Resize, AgreesWithFloatFormulaWithinOneLevel) {
  const RgbImage src = pattern_image(50, 40);
  const RgbImage out = resize_bicubic(src, 50, 17);  // vertical pass only
  auto K = [](double x) {
    x = std::fabs(x);
    const double a = -0.5;
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
  };
  const double scale = 40.0 / 17, fs = std::max(scale, 1.0), support = 2 * fs;
  for (int o = 0; o < 17; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(int(center - support + 0.5), 0), hi = std::min(int(center + support + 0.5), 40);
    double wsum = 0;
    for (int j = lo; j < hi; ++j) wsum += K((j - center + 0.5) / fs);
    for (int x = 0; x < 50; ++x) {
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (int j = lo; j < hi; ++j) v += src.at(x, j, c) * K((j - center + 0.5) / fs) / wsum;
        const double clamped = std::clamp(std::round(v), 0.0, 255.0);
        EXPECT_NEAR(out.at(x, o, c), clamped, 1.0) << x << "," << o;
      }
    }
  }
}

TEST(Preprocess, PadGeometryExamplesFromTheSpec) {
  auto g = pad_geometry(2550, 3300);
  EXPECT_EQ(g.width, 791);
  EXPECT_EQ(g.x0, 116);  // 233 / 2 = 116.5 rounds to even
  g = pad_geometry(2480, 3508);
  EXPECT_EQ(g.width, 724);
  EXPECT_EQ(g.x0, 150);
  g = pad_geometry(1920, 1080);
  EXPECT_EQ(g.height, 576);
  EXPECT_EQ(g.y0, 224);
  g = pad_geometry(500, 300);
  EXPECT_EQ(g.height, 614);
  EXPECT_EQ(g.y0, 205);
  g = pad_geometry(1024, 800);
  EXPECT_EQ(g.width, 1024);
  EXPECT_EQ(g.height, 800);
  EXPECT_EQ(g.y0, 112);
  g = pad_geometry(2049, 2048);  // rounds to the full square: stretched, no padding
  EXPECT_EQ(g.width, 1024);
  EXPECT_EQ(g.height, 1024);
}

// ImageOps.pad(image, (1024, 1024), color=(127, 127, 127)), byte for byte.
TEST(Preprocess, PaddedGlobalViewBitExactAgainstPillow) {
  for (const auto& c : golden()["pad"]) {
    const int w = c["src"][0], h = c["src"][1];
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const RgbImage view = pad_to_square(pattern_image(w, h));
    ASSERT_EQ(view.width, 1024);
    ASSERT_EQ(view.height, 1024);
    for (int ch = 0; ch < 3; ++ch) {
      EXPECT_EQ(view.at(0, 0, ch), c["corner"][ch].get<int>());
      EXPECT_EQ(view.at(512, 512, ch), c["center"][ch].get<int>());
    }
    EXPECT_EQ(crc32(view), c["crc32"].get<uint32_t>());
  }
}

TEST(Preprocess, TileGridCandidatesInCPythonOrder) {
  const auto& want = golden()["candidates"];
  const auto got = tile_grid_candidates();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].cols, want[i][0].get<int>()) << i;
    EXPECT_EQ(got[i].rows, want[i][1].get<int>()) << i;
  }
}

TEST(Preprocess, TileGridMatchesOfficialChoice) {
  for (const auto& c : golden()["grids"]) {
    const TileGrid g = select_tile_grid(c[0], c[1]);
    EXPECT_EQ(g.cols, c[2].get<int>()) << c;
    EXPECT_EQ(g.rows, c[3].get<int>()) << c;
  }
  // Spec examples, including both tie cases.
  EXPECT_EQ(select_tile_grid(1000, 1000), (TileGrid{2, 2}));
  EXPECT_EQ(select_tile_grid(5000, 5000), (TileGrid{5, 5}));
  EXPECT_EQ(select_tile_grid(1250, 1000), (TileGrid{5, 4}));
  EXPECT_EQ(select_tile_grid(2480, 3508), (TileGrid{4, 6}));
  EXPECT_EQ(select_tile_grid(641, 100), (TileGrid{13, 2}));
  EXPECT_EQ(select_tile_grid(640, 640), (TileGrid{1, 1}));
}

TEST(Preprocess, ImageTokenCounts) {
  EXPECT_EQ(image_token_count({1, 1}), 273);
  EXPECT_EQ(image_token_count({2, 2}), 693);
  EXPECT_EQ(image_token_count({5, 5}), 2823);
  EXPECT_EQ(image_token_count({4, 6}), 2733);
  EXPECT_EQ(image_token_count({7, 4}), 3113);
  EXPECT_EQ(image_token_count({4, 3}), 1503);
}

// dynamic_preprocess: stretch to (640 wc) x (640 hc) and cut row-major, against Pillow.
TEST(Preprocess, TilesBitExactAgainstPillow) {
  for (const auto& c : golden()["tiles"]) {
    const int w = c["src"][0], h = c["src"][1];
    const TileGrid grid = select_tile_grid(w, h);
    ASSERT_EQ(grid.cols, c["grid"][0].get<int>());
    ASSERT_EQ(grid.rows, c["grid"][1].get<int>());
    if (!grid.has_tiles()) continue;
    const auto tiles = cut_tiles(pattern_image(w, h), grid);
    ASSERT_EQ(tiles.size(), size_t(grid.cols * grid.rows));
    uint32_t crc = 0;
    for (const RgbImage& t : tiles) crc = crc32(t.pixels.data(), t.pixels.size(), crc);
    EXPECT_EQ(crc, c["tiles_crc32"].get<uint32_t>()) << w << "x" << h;
  }
}

TEST(Preprocess, NormalisationMatchesTorchvisionFloat32) {
  const auto& want = golden()["normalize"];
  RgbImage img(256, 1);
  for (int p = 0; p < 256; ++p) img.pixels[3 * p] = img.pixels[3 * p + 1] = img.pixels[3 * p + 2] = uint8_t(p);
  std::vector<float> out(3 * 256);
  normalize_to_chw(img, out.data());
  for (int p = 0; p < 256; ++p) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(std::bit_cast<uint32_t>(out[c * 256 + p]), want[p].get<uint32_t>()) << p;
  }
  EXPECT_FLOAT_EQ(out[127], -1.0f / 255.0f);  // the pad colour is not 0
}

TEST(Preprocess, PreprocessPageLayout) {
  const RgbImage page = pattern_image(1500, 900);
  const PagePixels base = preprocess_page(page, VisionMode::Base);
  EXPECT_FALSE(base.grid.has_tiles());
  EXPECT_EQ(base.image_tokens(), 273);
  ASSERT_EQ(base.global.size(), size_t(3 * 1024 * 1024));
  EXPECT_TRUE(base.tiles.empty());

  const PagePixels gundam = preprocess_page(page, VisionMode::Gundam);
  const TileGrid grid = select_tile_grid(1500, 900);
  EXPECT_EQ(gundam.grid, grid);
  EXPECT_EQ(gundam.image_tokens(), image_token_count(grid));
  EXPECT_EQ(gundam.global, base.global);
  ASSERT_EQ(gundam.tiles.size(), size_t(grid.cols * grid.rows) * 3 * 640 * 640);

  // CHW planes of tile 1 equal the normalised pixels of cut_tiles()[1].
  const auto tiles = cut_tiles(page, grid);
  const size_t plane = 640 * 640, tile = 3 * plane;
  for (size_t i : {size_t(0), size_t(12345), plane - 1}) {
    for (int c = 0; c < 3; ++c) {
      const float want = (tiles[1].pixels[3 * i + c] / 255.0f - 0.5f) / 0.5f;
      EXPECT_EQ(gundam.tiles[tile + c * plane + i], want);
    }
  }
  // Global view: the pad rows at the top hold -1/255 in every channel.
  const RgbImage view = pad_to_square(page);
  EXPECT_EQ(base.global[0], (127 / 255.0f - 0.5f) / 0.5f);
  EXPECT_EQ(base.global[2 * 1024 * 1024 + 600 * 1024 + 17], (view.at(17, 600, 2) / 255.0f - 0.5f) / 0.5f);

  // Small pages get no tiles in Gundam mode.
  EXPECT_FALSE(preprocess_page(pattern_image(640, 300), VisionMode::Gundam).grid.has_tiles());
  doc_test::expect_invalid([] { preprocess_page(pattern_image(1, 5), VisionMode::Base); }, {"1x5"});
}

}  // namespace
}  // namespace folio

namespace folio {
namespace {

// An A4 page at 300 DPI in Gundam mode: 4 x 6 tiles, 2733 image tokens (docs/deepencoder.md 1.4).
TEST(Preprocess, A4At300DpiGundam) {
  const PagePixels p = preprocess_page(doc_test::pattern_image(2480, 3508), VisionMode::Gundam);
  EXPECT_EQ(p.grid, (TileGrid{4, 6}));
  EXPECT_EQ(p.image_tokens(), 2733);
  EXPECT_EQ(p.tiles.size(), size_t(24) * 3 * 640 * 640);
  for (float v : {p.tiles.front(), p.tiles.back(), p.global[1000]}) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LE(v, 1.0f);
  }
}

}  // namespace
}  // namespace folio
