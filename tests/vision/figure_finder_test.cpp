// The figure finder on pages whose truth is known: tests/fixtures/mini2/figure_page.png (made by
// tools/fixtures/make_figure_fixture.py: a line plot, a scatter plot and a terminal on a page of
// text, each figure's ink box measured by drawing it alone) gives each figure at its ink; pages of
// text, contents, an index and a ruled table (the layout fixtures) give none; so do a blank page and
// a page too small for any figure.
#include "vision/figure_finder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "doc/gray_page.h"
#include "doc/image.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/";

std::vector<FigureBox> figures_of(const std::string& png) {
  const RgbImage page = load_image(kDir + png);
  const std::vector<uint8_t> gray = gray_bytes(page);
  return find_figures(gray.data(), page.width, page.height);
}

double iou(const FigureBox& a, const std::vector<int>& b) {
  const double ix = std::max(0, std::min(a.x1, b[2]) - std::max(a.x0, b[0]));
  const double iy = std::max(0, std::min(a.y1, b[3]) - std::max(a.y0, b[1]));
  const double inter = ix * iy;
  const double area_a = double(a.x1 - a.x0) * (a.y1 - a.y0), area_b = double(b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter);
}

TEST(FigureFinder, FindsEachFigureOfAPageOfTextAtItsInk) {
  const auto truth = nlohmann::json::parse(std::ifstream(kDir + "figure_page.json"))["figures"].get<std::vector<std::vector<int>>>();
  const std::vector<FigureBox> found = figures_of("figure_page.png");
  ASSERT_EQ(found.size(), truth.size());
  for (size_t i = 0; i < truth.size(); ++i)  // both in reading order (y0, then x0)
    EXPECT_GE(iou(found[i], truth[i]), 0.95) << "figure " << i << ": " << found[i].x0 << "," << found[i].y0 << " - " << found[i].x1
                                             << "," << found[i].y1;
}

TEST(FigureFinder, PagesOfTextContentsIndexesAndRuledTablesHaveNone) {
  for (const std::string png : {"layout_page.png", "contents_page.png", "contents_noleader_page.png", "index_page.png"})
    EXPECT_TRUE(figures_of(png).empty()) << png;
}

TEST(FigureFinder, ABlankPageOrATinyOneHasNone) {
  std::vector<uint8_t> blank(600 * 800, 255);
  EXPECT_TRUE(find_figures(blank.data(), 600, 800).empty());
  std::vector<uint8_t> tiny(4 * 3, 0);
  EXPECT_TRUE(find_figures(tiny.data(), 4, 3).empty());
  EXPECT_TRUE(find_figures(nullptr, 0, 0).empty());
}

}  // namespace
}  // namespace folio
