// Page image -> the normalised pixel tensors the Unlimited-OCR vision encoder reads
// (docs/deepencoder.md section 1).
//
// Promises, matching the official code (Pillow ImageOps.pad, dynamic_preprocess, torchvision
// ToTensor + Normalize) exactly, byte for byte up to the float conversion:
//  - global view: aspect-preserving Pillow-bicubic resize into 1024 x 1024 (contained size
//    rounded half-to-even from the quotient), centred on grey (127, 127, 127) with a
//    half-to-even offset;
//  - Gundam tiles (only when a side exceeds 640): the grid (wc x hc, 2..32 tiles) chosen by
//    select_tile_grid from the official candidate list and tie rule, the whole image stretched to
//    (640 wc) x (640 hc) and cut into 640 x 640 tiles in row-major order;
//  - every view normalised as ((p / 255) - 0.5) / 0.5 in float32, planar CHW, channel 0 = R.
// Image-token counts: 273 per global view, plus (10 hc) x (10 wc + 1) for the tiles.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "doc/image.h"

namespace folio {

// Base: the 1024 global view only (single pages, and every page of a multi-page input).
// Gundam: the global view plus 640 tiles when a side exceeds 640 (single pages only).
enum class VisionMode { Base, Gundam };

inline constexpr int kGlobalViewSide = 1024;
inline constexpr int kTileSide = 640;
inline constexpr uint8_t kPadValue = 127;  // int(0.5 * 255): normalises to -1/255, not 0

struct TileGrid {
  int cols = 1;  // wc: tiles across
  int rows = 1;  // hc: tiles down
  bool has_tiles() const { return cols * rows > 1; }
  bool operator==(const TileGrid&) const = default;
};

// The 118 candidate grids in the order the official code visits them.
std::span<const TileGrid> tile_grid_candidates();

// Grid for a width x height page in Gundam mode: {1, 1} (no tiles) when both sides are <= 640,
// otherwise the official closest-aspect-ratio choice with its tie rule.
TileGrid select_tile_grid(int width, int height);

// Image-token placeholders of one page: 273 + (10 hc)(10 wc + 1) when grid has tiles, else 273.
int64_t image_token_count(TileGrid grid);

// Where the resized image lands inside the side x side global view.
struct PadGeometry {
  int width = 0, height = 0;  // contained size (the resize target)
  int x0 = 0, y0 = 0;         // top-left corner on the canvas
};
PadGeometry pad_geometry(int width, int height, int side = kGlobalViewSide);

// The padded global view as uint8 RGB (Pillow ImageOps.pad with color (127, 127, 127)).
RgbImage pad_to_square(const RgbImage& image, int side = kGlobalViewSide);

// The grid's tiles as uint8 RGB, row-major (tile i at column i % cols, row i / cols).
std::vector<RgbImage> cut_tiles(const RgbImage& image, TileGrid grid, int tile_side = kTileSide);

// Writes 3 * width * height floats (CHW, ((p / 255) - 0.5) / 0.5) to out.
void normalize_to_chw(const RgbImage& image, float* out);

// One page ready for the vision encoder.
struct PagePixels {
  TileGrid grid;              // {1, 1} when there are no tiles
  std::vector<float> global;  // [3, 1024, 1024]
  std::vector<float> tiles;   // [cols * rows, 3, 640, 640] when grid.has_tiles(), else empty
  int64_t image_tokens() const { return image_token_count(grid); }
};

PagePixels preprocess_page(const RgbImage& page, VisionMode mode);

}  // namespace folio
