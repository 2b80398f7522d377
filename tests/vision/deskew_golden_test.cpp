// Deskewing against its Python reference (tools/train/mini2/deskew.py): the layout fixture page
// turned by 1.5 degrees, the angle the reference finds and the page it turns back
// (tools/fixtures/make_deskew_fixture.py).
#include "vision/deskew.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/median.h"
#include "doc/gray_page.h"
#include "doc/image.h"
#include "vision/page_layout.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/";

double median_line_height(const PageLayout& layout) {
  std::vector<double> h;
  for (const LayoutLine& l : layout.lines) h.push_back(l.y1 - l.y0);
  return median(h);
}

TEST(Deskew, FindsAndUndoesTheTiltAsThePythonReferenceDoes) {
  std::ifstream in(kDir + "deskew.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  const RgbImage tilted = load_image(kDir + "deskew_tilted.png"), level = load_image(kDir + "deskew_level.png");
  const std::vector<uint8_t> t = gray_bytes(tilted), l = gray_bytes(level);
  const double angle = skew_angle(t.data(), tilted.width, tilted.height);
  EXPECT_DOUBLE_EQ(angle, want["tilted_angle"].get<double>());
  ThreadPool two(2);  // angles scored on two threads: the same choice
  EXPECT_EQ(skew_angle(t.data(), tilted.width, tilted.height, &two), angle);
  const std::vector<uint8_t> got = rotate_page(t.data(), tilted.width, tilted.height, angle);
  ASSERT_EQ(got.size(), l.size());
  size_t off = 0;
  int worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int d = std::abs(int(got[i]) - int(l[i]));
    off += d != 0;
    worst = std::max(worst, d);
  }
  // The same double arithmetic: equal bytes (a rounding tie could move one by a level).
  EXPECT_LE(worst, 1);
  EXPECT_LE(off, got.size() / 100000);
  // The level page is left alone, and deskewing gives back the lines the tilt broke: a tilted line
  // spans more rows (and neighbours that share rows are only cut apart where they are thinnest).
  const RgbImage page = load_image(kDir + "layout_page.png");
  const std::vector<uint8_t> p = gray_bytes(page);
  EXPECT_EQ(skew_angle(p.data(), page.width, page.height), want["layout_page_angle"].get<double>());
  EXPECT_EQ(skew_angle(p.data(), page.width, page.height), 0.0);
  const double before = median_line_height(find_layout(t.data(), tilted.width, tilted.height));
  const double after = median_line_height(find_layout(got.data(), tilted.width, tilted.height));
  const double straight = median_line_height(find_layout(p.data(), page.width, page.height));
  EXPECT_GT(before, straight + 5);
  EXPECT_NEAR(after, straight, 1.0);
}

TEST(Deskew, BlankPagesAndTurnsOfZero) {
  std::vector<uint8_t> blank(200 * 100, 255);
  EXPECT_EQ(skew_angle(blank.data(), 200, 100), 0.0);
  blank[50 * 200 + 20] = 0;
  EXPECT_EQ(rotate_page(blank.data(), 200, 100, 0.0), blank);
  // Paper comes in from beyond the edges.
  const std::vector<uint8_t> turned = rotate_page(std::vector<uint8_t>(200 * 100, 0).data(), 200, 100, 3.0);
  EXPECT_EQ(turned[0], 255);
  EXPECT_EQ(turned[50 * 200 + 100], 0);
}

}  // namespace
}  // namespace folio
