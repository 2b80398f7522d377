// Layout of a page's image embeddings (docs/deepencoder.md 5.1), on features whose values encode
// where they came from.
#include <gtest/gtest.h>

#include "core/error.h"
#include "vision/image_assembly.h"

namespace folio {
namespace {

constexpr int64_t kDim = 3;

// Token (y, x) of view v holds {v, y, x}.
ViewFeatures view(int64_t v, int64_t side) {
  ViewFeatures f;
  f.side = side;
  f.dim = kDim;
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x) f.rows.insert(f.rows.end(), {float(v), float(y), float(x)});
  return f;
}

const std::vector<float> kNewline = {-1, -1, -1}, kSep = {-2, -2, -2};

std::vector<float> row(const std::vector<float>& all, int64_t i) { return {all.begin() + i * kDim, all.begin() + (i + 1) * kDim}; }

TEST(ImageAssembly, TokenCounts) {
  EXPECT_EQ(image_token_count(16, 10, {1, 1}, false), 273);
  EXPECT_EQ(image_token_count(16, 10, {2, 2}, true), 693);
  EXPECT_EQ(image_token_count(16, 10, {4, 6}, true), 2733);  // A4 at 300 DPI
  EXPECT_EQ(image_token_count(16, 10, {7, 4}, true), 3113);
}

TEST(ImageAssembly, GlobalOnly) {
  const int64_t g = 4;
  auto out = assemble_image_embeddings(view(9, g), {}, {1, 1}, kNewline, kSep);
  ASSERT_EQ(static_cast<int64_t>(out.size()), image_token_count(g, 0, {1, 1}, false) * kDim);
  int64_t i = 0;
  for (int64_t y = 0; y < g; ++y) {
    for (int64_t x = 0; x < g; ++x) EXPECT_EQ(row(out, i++), (std::vector<float>{9, float(y), float(x)}));
    EXPECT_EQ(row(out, i++), kNewline);
  }
  EXPECT_EQ(row(out, i++), kSep);
}

TEST(ImageAssembly, TilesAreStitchedIntoOneGridBeforeTheGlobalView) {
  const int64_t g = 2, t = 3;
  const TileLayout grid{3, 2};  // 3 across, 2 down: tile i at column i % 3, row i / 3
  std::vector<ViewFeatures> tiles;
  for (int64_t i = 0; i < 6; ++i) tiles.push_back(view(i, t));
  auto out = assemble_image_embeddings(view(100, g), tiles, grid, kNewline, kSep);
  ASSERT_EQ(static_cast<int64_t>(out.size()), image_token_count(g, t, grid, true) * kDim);
  ASSERT_EQ(image_token_count(g, t, grid, true), (2 * 3) * (3 * 3 + 1) + 2 * 3 + 1);
  int64_t i = 0;
  for (int64_t R = 0; R < t * grid.down; ++R) {  // newline after every row of the big grid, not per tile
    for (int64_t C = 0; C < t * grid.across; ++C)
      EXPECT_EQ(row(out, i++), (std::vector<float>{float((R / t) * 3 + C / t), float(R % t), float(C % t)})) << R << "," << C;
    EXPECT_EQ(row(out, i++), kNewline);
  }
  for (int64_t y = 0; y < g; ++y) {
    for (int64_t x = 0; x < g; ++x) EXPECT_EQ(row(out, i++), (std::vector<float>{100, float(y), float(x)}));
    EXPECT_EQ(row(out, i++), kNewline);
  }
  EXPECT_EQ(row(out, i++), kSep);
}

TEST(ImageAssembly, BadInputsAreRejected) {
  std::vector<ViewFeatures> three = {view(0, 2), view(1, 2), view(2, 2)};
  try {
    assemble_image_embeddings(view(9, 4), three, {2, 2}, kNewline, kSep);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 tiles do not fill a 2x2 grid"), std::string::npos) << e.what();
  }
  std::vector<ViewFeatures> mixed = {view(0, 2), view(1, 3)};
  EXPECT_THROW(assemble_image_embeddings(view(9, 4), mixed, {2, 1}, kNewline, kSep), Error);
  EXPECT_THROW(assemble_image_embeddings(view(9, 4), {}, {1, 1}, std::vector<float>{1, 2}, kSep), Error);
  ViewFeatures broken = view(9, 4);
  broken.rows.pop_back();
  EXPECT_THROW(assemble_image_embeddings(broken, {}, {1, 1}, kNewline, kSep), Error);
}

}  // namespace
}  // namespace folio
