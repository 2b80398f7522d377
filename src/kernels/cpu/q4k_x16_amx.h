// Internal to kernels_avx512_vnni.cpp (include it there only, after q4k_x16_vnni.h, whose column
// helpers it uses): the interleaved q4_k product (core/row_interleave.h) of two activation rows and
// more on AMX int8 tiles, where int8_amx_active() (cpu_features.h).
//
// With several rows the VNNI kernel is bound by its 512-bit integer multiplies, which one port
// runs: per 16 weight rows and block, 128 of them for each activation row. Here one TDPBSSD
// multiplies a sub-block's 32 activations of up to 16 rows with the 32 codes of 16 weight rows
// (their quads are already a B tile's rows once the nibbles are split apart), and what is left on
// the vector ports per activation row is applying the 8 scales: 8 multiplies, not 128.
//
// Same bits as the VNNI kernel: each row's block sum S = sum over sub-blocks j of scale_j times the
// sub-block's exact dot is an exact integer either way, and the floats then take the contract's
// two FMAs (GroupSumsK4).
#pragma once

#include "kernels/cpu/amx_tiles.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")

namespace folio::kernels::detail {
namespace {

// Tiles 0-3: sums (rows: activation rows, 16 i32 columns: weight rows); 4 and 6: a sub-block's
// activations (rows x 32 bytes); 5 and 7: its codes (8 rows of 4 elements x 16 weight rows).
inline void q4k_amx_configure(int rows) {
  TileConfig c;
  for (int t = 0; t < 4; ++t) c.tile(t, rows, 64);
  c.tile(4, rows, 32).tile(6, rows, 32).tile(5, 8, 64).tile(7, 8, 64).load();
}

constexpr int kAmxInputs = 16;  // activation rows per pass over the weights (a tile's rows)

// Sub-blocks 4h .. 4h + 3 of one block column: their exact dots into sums[j - 4h] (rows activation
// rows, 16 columns weight rows). codes: sub-block j's B tile at codes + 512 j; x: the block's
// activations of the first row, `stride` bytes to the next.
inline void q4k_tile_dots(const uint8_t* codes, const int8_t* x, size_t stride, int h, int32_t (*sums)[kAmxInputs][16]) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int j = 4 * h;
  _tile_loadd(4, x + 32 * j, stride);
  _tile_loadd(5, codes + 512 * j, 64);
  _tile_dpbssd(0, 4, 5);
  _tile_loadd(6, x + 32 * (j + 1), stride);
  _tile_loadd(7, codes + 512 * (j + 1), 64);
  _tile_dpbssd(1, 6, 7);
  _tile_loadd(4, x + 32 * (j + 2), stride);
  _tile_loadd(5, codes + 512 * (j + 2), 64);
  _tile_dpbssd(2, 4, 5);
  _tile_loadd(6, x + 32 * (j + 3), stride);
  _tile_loadd(7, codes + 512 * (j + 3), 64);
  _tile_dpbssd(3, 6, 7);
  _tile_stored(0, sums[0], 64);
  _tile_stored(1, sums[1], 64);
  _tile_stored(2, sums[2], 64);
  _tile_stored(3, sums[3], 64);
}

// One group of 16 weight rows against `rows` (<= kAmxInputs) activation rows, row g's blocks at
// x + g * xs, into y + g * ldy. The tiles are configured for `rows`.
inline void q4k_group_tiles(const uint8_t* grp, int64_t nb, const ActQ8K* x, int64_t xs, int rows, float* y,
                            int64_t ldy) {
  alignas(64) uint8_t codes[8 * 512];  // sub-block j: 8 quads of its codes, one per byte
  alignas(64) int32_t dots[8][kAmxInputs][16];
  GroupSumsK4 sums[kAmxInputs];
  const __m512i nib = _mm512_set1_epi8(0x0f);
  const size_t stride = static_cast<size_t>(xs) * sizeof(ActQ8K);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group_column_head(grp, b);
    const GroupFactorsK4 f(col);
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 8; ++k) {
        const uint8_t* quad = col + kQ4kGroupHeadBytes + 64 * (8 * i + k);
        prefetch_quad(quad);
        const __m512i v = _mm512_loadu_si512(quad);
        _mm512_store_si512(codes + 512 * (2 * i) + 64 * k, _mm512_and_si512(v, nib));
        _mm512_store_si512(codes + 512 * (2 * i + 1) + 64 * k, _mm512_and_si512(_mm512_srli_epi16(v, 4), nib));
      }
    tile_memory_fence();
    q4k_tile_dots(codes, x[b].q, stride, 0, dots);
    q4k_tile_dots(codes, x[b].q, stride, 1, dots + 4);
    tile_memory_fence();
    __m512i scale[8];
    for (int j = 0; j < 8; ++j) scale[j] = _mm512_cvtepu8_epi32(f.s.sc[j]);
    for (int g = 0; g < rows; ++g) {
      __m512i s = _mm512_mullo_epi32(_mm512_load_si512(dots[0][g]), scale[0]);
      for (int j = 1; j < 8; ++j) s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_load_si512(dots[j][g]), scale[j]));
      sums[g].add(s, f.mins, f.d, f.dmin, x[g * xs + b]);
    }
  }
  for (int g = 0; g < rows; ++g) _mm512_storeu_ps(y + g * ldy, sums[g].result());
}

// qgemv_q4k_x16_vnni's work where n >= 2 and int8_amx_active(): kAmxInputs activation rows per pass.
void qgemv_q4k_x16_amx(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                       float* y, int64_t ldy) {
  const int64_t nb = in / 256;
  const auto* x = static_cast<const ActQ8K*>(xq);
  for (int64_t g0 = 0; g0 < n; g0 += kAmxInputs) {
    const int rows = static_cast<int>(std::min<int64_t>(kAmxInputs, n - g0));
    q4k_amx_configure(rows);
    prefetch_lines(reinterpret_cast<uintptr_t>(w + static_cast<size_t>(r0) * rb),
                   std::min(kQPrefetchBytes, static_cast<size_t>(r1 - r0) * rb));
    for (int64_t r = r0; r < r1; r += kGroupRows)
      q4k_group_tiles(w + static_cast<size_t>(r) * rb, nb, x + g0 * nb, nb, rows, y + g0 * ldy + r, ldy);
  }
}

}  // namespace
}  // namespace folio::kernels::detail

#pragma GCC pop_options
