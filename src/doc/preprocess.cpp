#include "doc/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "doc/resize.h"

namespace folio {
namespace {

// The official code builds the candidates as a Python set and sorts it by wc * hc; ties keep the
// set's iteration order, which is fixed for small-int tuples (CPython >= 3.8). Listed verbatim
// from docs/deepencoder.md 1.4 and checked against CPython by tests/doc (fixture written by
// tools/fixtures/doc_preprocess_fixtures.py).
constexpr TileGrid kCandidates[] = {
    {1, 2},  {2, 1},  {3, 1},  {1, 3},  {2, 2},  {4, 1},  {1, 4},  {5, 1},  {1, 5},  {6, 1},  {3, 2},  {2, 3},
    {1, 6},  {7, 1},  {1, 7},  {4, 2},  {2, 4},  {1, 8},  {8, 1},  {9, 1},  {3, 3},  {1, 9},  {1, 10}, {5, 2},
    {10, 1}, {2, 5},  {1, 11}, {11, 1}, {6, 2},  {1, 12}, {2, 6},  {12, 1}, {3, 4},  {4, 3},  {13, 1}, {1, 13},
    {14, 1}, {1, 14}, {7, 2},  {2, 7},  {1, 15}, {5, 3},  {3, 5},  {15, 1}, {8, 2},  {16, 1}, {4, 4},  {1, 16},
    {2, 8},  {1, 17}, {17, 1}, {18, 1}, {3, 6},  {9, 2},  {1, 18}, {6, 3},  {2, 9},  {1, 19}, {19, 1}, {20, 1},
    {5, 4},  {2, 10}, {1, 20}, {4, 5},  {10, 2}, {7, 3},  {1, 21}, {3, 7},  {21, 1}, {2, 11}, {11, 2}, {22, 1},
    {1, 22}, {1, 23}, {23, 1}, {1, 24}, {24, 1}, {6, 4},  {3, 8},  {4, 6},  {2, 12}, {8, 3},  {12, 2}, {5, 5},
    {1, 25}, {25, 1}, {1, 26}, {2, 13}, {13, 2}, {26, 1}, {9, 3},  {27, 1}, {3, 9},  {1, 27}, {1, 28}, {7, 4},
    {14, 2}, {2, 14}, {4, 7},  {28, 1}, {29, 1}, {1, 29}, {3, 10}, {15, 2}, {1, 30}, {2, 15}, {10, 3}, {5, 6},
    {30, 1}, {6, 5},  {1, 31}, {31, 1}, {8, 4},  {1, 32}, {4, 8},  {32, 1}, {16, 2}, {2, 16},
};
static_assert(sizeof(kCandidates) / sizeof(kCandidates[0]) == 118);

// Python's round(): half to even (nearbyint under the default rounding mode).
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

std::span<const TileGrid> tile_grid_candidates() { return kCandidates; }

TileGrid select_tile_grid(int width, int height) {
  FOLIO_CHECK_INPUT(width > 0 && height > 0, "page size " + std::to_string(width) + "x" + std::to_string(height) +
                                                 " must be positive");
  if (width <= kTileSide && height <= kTileSide) return {1, 1};
  const double aspect = static_cast<double>(width) / height;
  const double area = static_cast<double>(width) * height;
  double best = INFINITY;
  TileGrid choice{1, 1};
  for (const TileGrid& g : kCandidates) {
    const double d = std::fabs(aspect - static_cast<double>(g.cols) / g.rows);
    if (d < best) {
      best = d;
      choice = g;
    } else if (d == best && area > 0.5 * kTileSide * kTileSide * g.cols * g.rows) {
      // The official tie rule: replace the choice when the image is large for this grid,
      // without asking whether the new grid is "better".
      choice = g;
    }
  }
  return choice;
}

int64_t image_token_count(TileGrid grid) {
  int64_t n = 16 * (16 + 1) + 1;  // global view: 16 rows of 16 + newline, then the separator
  if (grid.has_tiles()) n += int64_t(10) * grid.rows * (int64_t(10) * grid.cols + 1);
  return n;
}

PadGeometry pad_geometry(int width, int height, int side) {
  FOLIO_CHECK_INPUT(width > 0 && height > 0 && side > 0, "page size " + std::to_string(width) + "x" +
                                                             std::to_string(height) + " must be positive");
  // Pillow ImageOps.contain + pad: quotient first, then the multiplication, Python round().
  const double ratio = static_cast<double>(width) / height;
  PadGeometry g{side, side, 0, 0};
  if (ratio > 1.0) {
    g.height = round_half_even(static_cast<double>(height) / width * side);
  } else if (ratio < 1.0) {
    g.width = round_half_even(static_cast<double>(width) / height * side);
  }
  // Pillow would refuse a 0-pixel side (aspect ratio beyond 2048:1); folio keeps one pixel.
  g.width = std::max(g.width, 1);
  g.height = std::max(g.height, 1);
  if (g.width != side) {
    g.x0 = round_half_even((side - g.width) * 0.5);
  } else {
    g.y0 = round_half_even((side - g.height) * 0.5);
  }
  return g;
}

RgbImage pad_to_square(const RgbImage& image, int side) {
  const PadGeometry g = pad_geometry(image.width, image.height, side);
  RgbImage resized = resize_bicubic(image, g.width, g.height);
  if (g.width == side && g.height == side) return resized;
  RgbImage out(side, side, kPadValue);
  for (int y = 0; y < g.height; ++y) {
    std::memcpy(out.row(g.y0 + y) + static_cast<size_t>(g.x0) * 3, resized.row(y), static_cast<size_t>(g.width) * 3);
  }
  return out;
}

std::vector<RgbImage> cut_tiles(const RgbImage& image, TileGrid grid, int tile_side) {
  FOLIO_CHECK_INPUT(grid.cols >= 1 && grid.rows >= 1, "tile grid must have at least one tile");
  const RgbImage stretched = resize_bicubic(image, tile_side * grid.cols, tile_side * grid.rows);
  std::vector<RgbImage> tiles;
  tiles.reserve(static_cast<size_t>(grid.cols) * grid.rows);
  for (int i = 0; i < grid.cols * grid.rows; ++i) {
    const int c = i % grid.cols, r = i / grid.cols;
    RgbImage t(tile_side, tile_side);
    for (int y = 0; y < tile_side; ++y) {
      std::memcpy(t.row(y), stretched.row(r * tile_side + y) + static_cast<size_t>(c) * tile_side * 3,
                  static_cast<size_t>(tile_side) * 3);
    }
    tiles.push_back(std::move(t));
  }
  return tiles;
}

void normalize_to_chw(const RgbImage& image, float* out) {
  // torchvision: ToTensor divides by 255 in float32, Normalize then subtracts the mean and divides
  // by the std, both 0.5, in float32. A 256-entry table gives exactly those values.
  float lut[256];
  for (int p = 0; p < 256; ++p) lut[p] = (static_cast<float>(p) / 255.0f - 0.5f) / 0.5f;
  const size_t plane = static_cast<size_t>(image.width) * image.height;
  const uint8_t* px = image.pixels.data();
  for (size_t i = 0; i < plane; ++i) {
    out[i] = lut[px[3 * i]];
    out[plane + i] = lut[px[3 * i + 1]];
    out[2 * plane + i] = lut[px[3 * i + 2]];
  }
}

PagePixels preprocess_page(const RgbImage& page, VisionMode mode) {
  check_image_size(page.width, page.height, "page");
  PagePixels out;
  const size_t global_floats = size_t(3) * kGlobalViewSide * kGlobalViewSide;
  out.global.resize(global_floats);
  normalize_to_chw(pad_to_square(page, kGlobalViewSide), out.global.data());
  if (mode == VisionMode::Gundam) out.grid = select_tile_grid(page.width, page.height);
  if (out.grid.has_tiles()) {
    const std::vector<RgbImage> tiles = cut_tiles(page, out.grid, kTileSide);
    const size_t tile_floats = size_t(3) * kTileSide * kTileSide;
    out.tiles.resize(tile_floats * tiles.size());
    for (size_t i = 0; i < tiles.size(); ++i) normalize_to_chw(tiles[i], out.tiles.data() + i * tile_floats);
  }
  return out;
}

}  // namespace folio
