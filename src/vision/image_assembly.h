// How one page's projected view features become its rows of image embeddings
// (docs/deepencoder.md section 5.1): the local tiles stitched into one grid with `newline` after
// every row of that grid, then the global view with `newline` after every row, then `separator`.
// Local tiles come first although the published config says "global_view_pos": "head" (the official
// code ignores that key).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio {

// Projected features of one view: a side x side grid of tokens, row-major, `dim` floats each.
struct ViewFeatures {
  std::vector<float> rows;  // [side * side, dim]
  int64_t side = 0;
  int64_t dim = 0;
};

// Tiles across (width factor) and down (height factor) of a Gundam crop; tile i is at column
// i % across, row i / across. (Named apart from doc/preprocess.h's TileGrid, which describes the
// same grid for the pixels, so that one file can use both layers.)
struct TileLayout {
  int64_t across = 1;
  int64_t down = 1;
};

// Number of image embedding rows of a page: side (side + 1) + 1 for the global view and separator,
// plus (tile_side * down) (tile_side * across + 1) when there are tiles (n_tiles > 0).
int64_t image_token_count(int64_t global_side, int64_t tile_side, TileLayout grid, bool has_tiles);

// The page's rows [image_token_count(...), dim]. `tiles` is empty (no local view) or holds exactly
// grid.across * grid.down views of one common side. newline and separator have `dim` values.
// Throws InvalidInput on a tile count that does not match the grid, mixed tile sides or dims, or a
// view whose rows do not match its side.
std::vector<float> assemble_image_embeddings(const ViewFeatures& global, std::span<const ViewFeatures> tiles,
                                             TileLayout grid, std::span<const float> newline,
                                             std::span<const float> separator);

}  // namespace folio
