#include "vision/image_assembly.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace folio {

namespace {

void check_view(const ViewFeatures& v, int64_t dim, const std::string& what) {
  FOLIO_CHECK_INPUT(v.side > 0 && v.dim == dim && static_cast<int64_t>(v.rows.size()) == v.side * v.side * dim,
                    "image assembly: " + what + " has side " + std::to_string(v.side) + ", dim " + std::to_string(v.dim) +
                        " and " + std::to_string(v.rows.size()) + " values (expected dim " + std::to_string(dim) +
                        " and side^2 * dim values)");
}

}  // namespace

int64_t image_token_count(int64_t global_side, int64_t tile_side, TileLayout grid, bool has_tiles) {
  int64_t n = global_side * (global_side + 1) + 1;
  if (has_tiles) n += (tile_side * grid.down) * (tile_side * grid.across + 1);
  return n;
}

std::vector<float> assemble_image_embeddings(const ViewFeatures& global, std::span<const ViewFeatures> tiles,
                                             TileLayout grid, std::span<const float> newline,
                                             std::span<const float> separator) {
  const int64_t dim = global.dim;
  check_view(global, dim, "the global view");
  FOLIO_CHECK_INPUT(static_cast<int64_t>(newline.size()) == dim && static_cast<int64_t>(separator.size()) == dim,
                    "image assembly: image_newline / view_seperator must have " + std::to_string(dim) + " values");
  const bool has_tiles = !tiles.empty();
  if (has_tiles)
    FOLIO_CHECK_INPUT(grid.across > 0 && grid.down > 0 && static_cast<int64_t>(tiles.size()) == grid.across * grid.down,
                      "image assembly: " + std::to_string(tiles.size()) + " tiles do not fill a " +
                          std::to_string(grid.across) + "x" + std::to_string(grid.down) + " grid");
  const int64_t t = has_tiles ? tiles[0].side : 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    check_view(tiles[i], dim, "tile " + std::to_string(i));
    FOLIO_CHECK_INPUT(tiles[i].side == t, "image assembly: tile " + std::to_string(i) + " has side " +
                                              std::to_string(tiles[i].side) + ", tile 0 has " + std::to_string(t));
  }

  std::vector<float> out;
  out.reserve(static_cast<size_t>(image_token_count(global.side, t, grid, has_tiles) * dim));
  auto put = [&](const float* row) { out.insert(out.end(), row, row + dim); };
  if (has_tiles) {
    // One (t * down) x (t * across) grid: row R, column C is token (R % t, C % t) of tile
    // (R / t) * across + C / t; a newline ends every row of the stitched grid.
    for (int64_t R = 0; R < t * grid.down; ++R) {
      for (int64_t C = 0; C < t * grid.across; ++C) {
        const ViewFeatures& tile = tiles[static_cast<size_t>((R / t) * grid.across + C / t)];
        put(tile.rows.data() + ((R % t) * t + C % t) * dim);
      }
      put(newline.data());
    }
  }
  for (int64_t r = 0; r < global.side; ++r) {
    for (int64_t c = 0; c < global.side; ++c) put(global.rows.data() + (r * global.side + c) * dim);
    put(newline.data());
  }
  put(separator.data());
  return out;
}

}  // namespace folio
