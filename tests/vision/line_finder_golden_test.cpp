// folio-mini-ocr 2's line finder in C++ against its Python reference (tools/train/mini2/
// line_finder.py): tests/fixtures/mini2 holds a page typeset by groff and rendered at 200 DPI, and
// what the reference found on it (tools/fixtures/make_line_finder_fixture.py): every segment's box,
// crop width and ink sums, and a few crops value by value.
#include "model/vision/line_finder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "doc/gray_page.h"
#include "doc/image.h"
#include "doc/resize_float.h"
#include "model/io/safetensors.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/";

struct Fixture {
  std::vector<uint8_t> gray;
  int width = 0, height = 0;
  std::unique_ptr<SafetensorsCheckpoint> expected;
};

Fixture load_fixture() {
  Fixture f;
  const RgbImage page = load_image(kDir + "line_finder_page.png");
  f.gray = gray_bytes(page);
  f.width = page.width, f.height = page.height;
  f.expected = SafetensorsCheckpoint::open(kDir + "line_finder_golden.safetensors");
  return f;
}

double sum(const std::vector<float>& v, bool squares) {
  double s = 0;
  for (float x : v) s += squares ? double(x) * x : x;
  return s;
}

TEST(LineFinder, MatchesThePythonReferenceOnATypesetPage) {
  const Fixture f = load_fixture();
  const std::vector<FoundLine> lines = find_text_lines(f.gray.data(), f.width, f.height);
  const std::vector<float> boxes = to_f32_vector(f.expected->get("boxes")),
                           widths = to_f32_vector(f.expected->get("widths")),
                           sums = to_f32_vector(f.expected->get("ink_sums")),
                           squares = to_f32_vector(f.expected->get("ink_squares"));
  ASSERT_EQ(lines.size(), widths.size());
  ASSERT_GE(lines.size(), 12u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const FoundLine& l = lines[i];
    EXPECT_EQ(l.x0, boxes[4 * i]) << i;
    EXPECT_EQ(l.y0, boxes[4 * i + 1]) << i;
    EXPECT_EQ(l.x1, boxes[4 * i + 2]) << i;
    EXPECT_EQ(l.y1, boxes[4 * i + 3]) << i;
    EXPECT_EQ(l.crop.width, widths[i]) << i;
    // Float rounding only: sums of a few thousand values in [0, 1], stored as f32.
    EXPECT_NEAR(sum(l.crop.ink, false), sums[i], 1e-3 * std::max(1.0f, sums[i])) << i;
    EXPECT_NEAR(sum(l.crop.ink, true), squares[i], 1e-3 * std::max(1.0f, squares[i])) << i;
  }
  int compared = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string name = "crop_" + std::to_string(i);
    if (!f.expected->contains(name)) continue;
    const std::vector<float> want = to_f32_vector(f.expected->get(name));
    ASSERT_EQ(want.size(), lines[i].crop.ink.size()) << name;
    float err = 0;
    for (size_t k = 0; k < want.size(); ++k) err = std::max(err, std::fabs(want[k] - lines[i].crop.ink[k]));
    // The reference's crops are stored in f16 (relative step 2^-11 below 1).
    EXPECT_LT(err, 1e-3f) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

TEST(LineFinder, TheToleranceDiscriminates) {
  // The page with its ink one gray level darker (paper untouched): the boxes stay, and crops that
  // keep their width (the 0.5 ink threshold may move a line's core) change values by at least
  // 1 / (paper - ink) = 1/255, several times the 1e-3 allowed above.
  const Fixture f = load_fixture();
  std::vector<uint8_t> darker = f.gray;
  for (uint8_t& v : darker)
    if (v > 0 && v < 255) --v;
  const std::vector<FoundLine> a = find_text_lines(f.gray.data(), f.width, f.height);
  const std::vector<FoundLine> b = find_text_lines(darker.data(), f.width, f.height);
  ASSERT_EQ(a.size(), b.size());
  float err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].y0, b[i].y0);
    if (a[i].crop.width != b[i].crop.width) continue;
    for (size_t k = 0; k < a[i].crop.ink.size(); ++k) err = std::max(err, std::fabs(a[i].crop.ink[k] - b[i].crop.ink[k]));
  }
  std::printf("one gray level moves the crops by %.4f\n", err);
  EXPECT_GT(err, 3e-3f);
}

TEST(LineFinder, BlankAndTinyPagesGiveNoLines) {
  std::vector<uint8_t> blank(64 * 48, 255);
  EXPECT_TRUE(find_text_lines(blank.data(), 64, 48).empty());
  std::vector<uint8_t> black(64 * 48, 0);
  EXPECT_TRUE(find_text_lines(black.data(), 64, 48).empty());
  // One speck two rows high: a band under 3 rows is dropped.
  blank[10 * 64 + 10] = blank[11 * 64 + 10] = 0;
  EXPECT_TRUE(find_text_lines(blank.data(), 64, 48).empty());
}

TEST(ResizeFloat, MatchesPillowBilinearOnSmallCases) {
  // Pillow 9.4: Image.fromarray(np.array([[0, 1, 2, 3]], np.float32)).resize((2, 1), Image.BILINEAR)
  // -> [0.71428573, 2.2857144]: shrinking by 2 widens the triangle to 2 pixels; output 0 (centre 1)
  // reads pixels 0, 1, 2 with weights 3/4, 3/4, 1/4 renormalised: 1.25 / 1.75.
  const std::vector<float> row = {0, 1, 2, 3};
  const std::vector<float> half = resize_bilinear_f32(row, 4, 1, 2, 1);
  ASSERT_EQ(half.size(), 2u);
  EXPECT_NEAR(half[0], 0.71428573f, 1e-6f);
  EXPECT_NEAR(half[1], 2.2857144f, 1e-6f);
  // Same size is the identity; enlarging interpolates.
  EXPECT_EQ(resize_bilinear_f32(row, 4, 1, 4, 1), row);
  const std::vector<float> twice = resize_bilinear_f32({0, 4}, 2, 1, 4, 1);
  EXPECT_NEAR(twice[0], 0.0f, 1e-6f);
  EXPECT_NEAR(twice[1], 1.0f, 1e-6f);
  EXPECT_NEAR(twice[2], 3.0f, 1e-6f);
  EXPECT_NEAR(twice[3], 4.0f, 1e-6f);
  EXPECT_THROW(resize_bilinear_f32(row, 4, 1, 0, 1), Error);
}

}  // namespace
}  // namespace folio
