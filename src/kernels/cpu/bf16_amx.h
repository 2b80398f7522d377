// Internal: the bf16 GEMM's products on AMX tiles (bf16_gemm.h), for bf16_gemm.cpp and the
// attention's score pass (dense_attention_bf16.cpp), which include it inside their AVX512-BF16
// target regions. The public switch is in bf16_gemm.h (bf16_amx_active, set_bf16_amx).
//
// Where the CPU has AMX-BF16 and the kernel grants this process the tile state, one TDPBF16PS
// multiplies a 14 x 32 bf16 block of activations with a 32 x 16 block of weights: 7,168 products
// in one instruction, where vdpbf16ps makes 32. The packed operands stay as they are: a weight panel (pairs
// major, kBf16PanelCols words a pair) is already two tiles' rows 128 bytes apart; an activation
// panel (kBf16PanelRows rows, pair major) is one tile's rows once transposed, which is done for two
// panels at a time, once for all the weight panels of a call.
//
// Each sum is f32, over the pairs in order of k, from the bias or zero, as on the AVX-512 path, so
// a result does not depend on the thread split or the number of rows; its bits may differ from
// that path's (the hardware adds a pair's two products in its own order).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/transpose_avx512.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16")

namespace folio::kernels::detail {

// Rows and columns of the block one call of amx_blocks hands to its epilogue: 2 x 2 tiles, a tile's
// rows one activation panel.
inline constexpr int64_t kAmxRows = 2 * kBf16PanelRows, kAmxCols = 32;

// The tile state: 8 tiles of 64 bytes a row (C: 0-3 and A: 4-5 of kBf16PanelRows rows, B: 6-7 of
// 16 pairs). Per thread.
inline void amx_configure() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.tile(t, t < 6 ? kBf16PanelRows : 16, 64);
  c.load();
}

// Activation panel i of x, row major: row m's pair p at a[m * stride + p], stride a multiple of 16
// pairs, pairs past x.pairs() zero (16 pairs of the panel's rows at a time, through transpose16).
inline void panel_rows(const Bf16Activations& x, int64_t i, uint32_t* a, int64_t stride) {
  const int64_t pairs = x.pairs();
  const uint32_t* panel = x.panel(i);
  const __mmask16 rows = static_cast<__mmask16>((1u << kBf16PanelRows) - 1);
  for (int64_t p0 = 0; p0 < stride; p0 += 16) {
    __m512i v[16];
    for (int64_t k = 0; k < 16; ++k)
      v[k] = p0 + k < pairs ? _mm512_maskz_loadu_epi32(rows, panel + (p0 + k) * kBf16PanelRows) : _mm512_setzero_si512();
    transpose16(v);
    for (int64_t m = 0; m < kBf16PanelRows; ++m) _mm512_storeu_si512(a + m * stride + p0, v[m]);
  }
}

// For every block of kAmxRows activation rows (two panels) x 32 weight rows (`rows` weight rows in
// packed_w): the block's f32 sums, bias[c] first where given, as sums[r * 32 + c], handed to
// epilogue(i0, j0, sums, live_rows, live_cols) (i0: the block's first activation row, j0: its first
// weight row within packed_w). Single-threaded; configures this thread's tiles first.
template <class Epilogue>
void amx_blocks(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, const float* bias, Epilogue epilogue) {
  const int64_t pairs = x.pairs(), stride = (pairs + 15) / 16 * 16, panels = (rows + kBf16PanelCols - 1) / kBf16PanelCols;
  thread_local std::vector<uint32_t> a;
  a.resize(static_cast<size_t>(kAmxRows * stride));
  alignas(64) uint32_t tail[16 * kBf16PanelCols];  // the last 16 pairs of a weight panel, zero past `pairs`
  alignas(64) float sums[kAmxRows * kAmxCols], start[kAmxCols];
  amx_configure();
  for (int64_t i = 0; i < x.panels(); i += 2) {
    const int64_t i0 = i * kBf16PanelRows;
    panel_rows(x, i, a.data(), stride);
    if (i + 1 < x.panels()) panel_rows(x, i + 1, a.data() + kBf16PanelRows * stride, stride);
    else std::fill(a.begin() + kBf16PanelRows * stride, a.end(), 0u);
    tile_memory_fence();
    for (int64_t j = 0; j < panels; ++j) {
      const int64_t j0 = j * kBf16PanelCols, live_cols = std::min(kBf16PanelCols, rows - j0);
      const uint32_t* b = packed_w + j * kBf16PanelCols * pairs;
      if (bias) {
        std::fill(start, start + kAmxCols, 0.f);
        std::copy_n(bias + j0, live_cols, start);
        tile_memory_fence();
        _tile_loadd(0, start, 0);  // stride 0: every row of the tile starts from the bias
        _tile_loadd(1, start + 16, 0);
        _tile_loadd(2, start, 0);
        _tile_loadd(3, start + 16, 0);
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
        const uint32_t* bp = b + p0 * kBf16PanelCols;
        if (p0 + 16 > pairs) {
          std::fill(tail, tail + 16 * kBf16PanelCols, 0u);
          std::copy_n(bp, (pairs - p0) * kBf16PanelCols, tail);
          tile_memory_fence();
          bp = tail;
        }
        _tile_loadd(4, a.data() + p0, stride * 4);
        _tile_loadd(5, a.data() + kBf16PanelRows * stride + p0, stride * 4);
        _tile_loadd(6, bp, kBf16PanelCols * 4);
        _tile_loadd(7, bp + 16, kBf16PanelCols * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, sums, kAmxCols * 4);
      _tile_stored(1, sums + 16, kAmxCols * 4);
      _tile_stored(2, sums + kBf16PanelRows * kAmxCols, kAmxCols * 4);
      _tile_stored(3, sums + kBf16PanelRows * kAmxCols + 16, kAmxCols * 4);
      epilogue(i0, j0, static_cast<const float*>(sums), std::min(kAmxRows, x.rows() - i0), live_cols);
    }
  }
}

}  // namespace folio::kernels::detail

#pragma GCC pop_options
