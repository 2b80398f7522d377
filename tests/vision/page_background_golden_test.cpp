// The page background removed (vision/page_background.h) against its Python reference
// (tools/train/mini2/line_finder.py remove_background): tests/fixtures/mini2/shaded_page.png is a
// manual's page with listings on a grey and on a tinted box and a shaded table header
// (tools/fixtures/make_background_fixture.py); shaded_page_clean.png is what the reference made of
// it. Also against a plain closing computed here pixel by pixel, on random pages of many sizes.
#include "vision/page_background.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "doc/gray_page.h"
#include "doc/image.h"
#include "vision/page_layout.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/";

std::vector<uint8_t> load_gray(const std::string& name, int* width, int* height) {
  const RgbImage img = load_image(kDir + name);
  *width = img.width, *height = img.height;
  return gray_bytes(img);
}

// The closing by definition: the max over each window, then the min over each window of that.
std::vector<uint8_t> plain_closing(const std::vector<uint8_t>& g, int width, int height, int w) {
  const int r = w / 2;
  auto pass = [&](const std::vector<uint8_t>& in, bool take_max) {
    std::vector<uint8_t> out(in.size());
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        int v = take_max ? 0 : 255;
        for (int yy = std::max(0, y - r); yy <= std::min(height - 1, y + r); ++yy)
          for (int xx = std::max(0, x - r); xx <= std::min(width - 1, x + r); ++xx)
            v = take_max ? std::max<int>(v, in[size_t(yy) * width + xx]) : std::min<int>(v, in[size_t(yy) * width + xx]);
        out[size_t(y) * width + x] = uint8_t(v);
      }
    return out;
  };
  return pass(pass(g, true), false);
}

TEST(PageBackground, MatchesThePythonReferenceOnAShadedPage) {
  int w = 0, h = 0, w2 = 0, h2 = 0;
  const std::vector<uint8_t> page = load_gray("shaded_page.png", &w, &h);
  const std::vector<uint8_t> expected = load_gray("shaded_page_clean.png", &w2, &h2);
  ASSERT_EQ(w, w2);
  ASSERT_EQ(h, h2);
  const std::vector<uint8_t> got = remove_background(page.data(), w, h);
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != expected[i];
  EXPECT_EQ(differ, 0u);
  // The boxes were there and are gone: far fewer pixels below paper after.
  auto dark = [](const std::vector<uint8_t>& v) { return std::count_if(v.begin(), v.end(), [](uint8_t x) { return x < 250; }); };
  EXPECT_GT(dark(page), 4 * dark(got));
}

TEST(PageBackground, EqualsAPlainClosingOnRandomPagesOfManySizes) {
  std::mt19937 rng(7);
  for (const auto& [width, height] : {std::pair{9, 9}, {17, 3}, {40, 31}, {171, 12}, {350, 23}, {1871, 5}}) {
    std::vector<uint8_t> g(size_t(width) * height);
    for (auto& v : g) v = uint8_t(rng() % 256);
    const int w = background_window(width);
    const std::vector<uint8_t> bg = plain_closing(g, width, height, w), got = remove_background(g.data(), width, height);
    for (size_t i = 0; i < g.size(); ++i) {
      const int b = std::max<int>(bg[i], 1);
      ASSERT_EQ(got[i], std::min(255, (g[i] * 255 + b / 2) / b)) << width << "x" << height << " at " << i;
    }
  }
}

TEST(PageBackground, WindowGrowsWithThePage) {
  EXPECT_EQ(background_window(100), 9);
  EXPECT_EQ(background_window(1275), 15);  // letter at 150 DPI
  EXPECT_EQ(background_window(2550), 31);  // and at 300 DPI
}

TEST(PageBackground, WhitePaperAndTextOnItAreUnchanged) {
  const int width = 300, height = 60;
  std::vector<uint8_t> g(size_t(width) * height, 255);
  for (int y = 20; y < 32; ++y)
    for (int x = 30; x < 260; x += 7) g[size_t(y) * width + x] = g[size_t(y) * width + x + 1] = 20;
  EXPECT_EQ(remove_background(g.data(), width, height), g);
}

TEST(PageBackground, ListingsOnShadedBoxesAreFoundLineByLine) {
  int w = 0, h = 0;
  const std::vector<uint8_t> page = load_gray("shaded_page.png", &w, &h);
  const PageLayout layout = find_layout(page.data(), w, h);
  // heading, 2 prose lines, 3 listing lines, 1 prose line, 2 listing lines, 3 table rows
  EXPECT_EQ(layout.lines.size(), 12u);
  for (const LayoutLine& l : layout.lines) {
    EXPECT_LT(l.y1 - l.y0, 40) << "a box taken for one tall line";
    // The recognizer sees paper as 0: a crop is mostly paper, so its median is 0 (a shade left on
    // the page reaches every crop of a listing as faint ink, 0.1-0.2).
    for (const LineSegment& s : l.segments) {
      std::vector<float> v = s.crop.ink;
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      EXPECT_LT(v[v.size() / 2], 0.01f) << "line at y " << l.y0;
    }
  }
}

}  // namespace
}  // namespace folio
