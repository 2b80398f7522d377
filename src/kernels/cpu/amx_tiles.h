// Internal: what every AMX kernel shares (bf16_amx.h, q4k_x16_amx.h): the tile
// configuration and the compiler fence around tile loads and stores. Include from a file compiled
// for (or a region targeting) AVX-512; this header adds amx-tile for its own functions only.
#pragma once

#include <immintrin.h>

#include <cstdint>

#pragma GCC push_options
#pragma GCC target("amx-tile")

namespace folio::kernels::detail {

// GCC 12's tile intrinsics tell the compiler neither that ldtilecfg / tileloadd read memory nor
// that tilestored writes it: without this around them, stores into what they read are dropped as
// dead and loads of what they wrote are moved before them.
inline void tile_memory_fence() { __asm__ __volatile__("" ::: "memory"); }

// Palette 1's configuration: tile t has rows[t] rows of colsb[t] bytes (at most 16 x 64).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  TileConfig& tile(int t, int tile_rows, int row_bytes) {
    rows[t] = static_cast<uint8_t>(tile_rows);
    colsb[t] = static_cast<uint16_t>(row_bytes);
    return *this;
  }
  // Makes this the calling thread's tile configuration (its tiles' contents are then zero).
  void load() const {
    tile_memory_fence();
    _tile_loadconfig(this);
  }
};

}  // namespace folio::kernels::detail

#pragma GCC pop_options
