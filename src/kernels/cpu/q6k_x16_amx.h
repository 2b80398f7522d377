// Internal to kernels_avx512_vnni.cpp (include it there only, after q6k_x16_vnni.h and
// q4k_x16_amx.h, whose helpers it uses): the interleaved q6_k product (core/row_interleave.h) of four
// activation rows and more on AMX int8 tiles, where int8_amx_active() (cpu_features.h).
//
// With several rows the VNNI kernel is bound by its 512-bit integer multiplies (one port): per 16
// weight rows and block, 64 vpdpbusd and 16 vpmulld for each activation row. Here the codes are
// unpacked once less 32 (signed, so no activation sums are needed for the offset) into B tiles of 4
// groups of 16 elements each, and one TDPBSSD multiplies them with 4 activation rows whose A tile
// keeps the groups apart (Q6kDiagRows); what is left per activation row is applying the 16 scales
// (16 vpmulld). A tile per group (K = 16) instead took four times the tile loads and stores and ran
// slower than VNNI with four rows (~600 cycles a block column, as the replicated layout tried before).
//
// Same bits as the VNNI and row kernels: each row's block integer S = sum over groups j of scale_j
// times the group's exact dot of (code - 32) with the activations is exact either way, and the
// floats then take the contract's one FMA per block.
#pragma once

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")

namespace folio::kernels::detail {
namespace {

constexpr int kQ6kAmxInputs = 4;  // activation rows per pass: 4 rows x 4 groups fill a tile's 16 rows

// An activation row's block as 4 A tiles, one per 4 groups of 16 (64 elements, chunk q): in tile
// q, row jl holds the chunk's 64 activations with all but group 4q + jl's 16 set to 0, so one
// TDPBSSD over 64 elements still gives each group's dot apart (row jl of the sums). Rows of several
// activation rows follow each other (row 4 gl + jl), 64 bytes apart.
struct alignas(64) Q6kDiagRows {
  int8_t q[4][kQ6kAmxInputs][4][64];  // [chunk][activation row of the pass][group in chunk][element]
};

// The A tiles of activation rows g0 .. g0 + rows - 1 (rows <= 4), block b of each, into d; the
// rows of a pass's missing activation rows are 0.
inline void q6k_diag_rows(const ActQ8K* x, int64_t xs, int64_t b, int rows, Q6kDiagRows& d) {
  if (rows < kQ6kAmxInputs) std::memset(&d, 0, sizeof(d));
  for (int g = 0; g < rows; ++g)
    for (int q = 0; q < 4; ++q) {
      const __m512i v = _mm512_loadu_si512(x[g * xs + b].q + 64 * q);
      for (int jl = 0; jl < 4; ++jl)
        _mm512_store_si512(d.q[q][g][jl], _mm512_maskz_mov_epi8(__mmask64{0xffff} << (16 * jl), v));
    }
}

// The diagonal rows of n activation rows (in passes of 4), block b of pass p at [p * nb + b], in a
// buffer of the calling thread's, valid until its next call.
inline const Q6kDiagRows* q6k_diag_activations(const ActQ8K* x, int64_t n, int64_t nb) {
  thread_local std::vector<Q6kDiagRows> rows;
  const int64_t passes = (n + kQ6kAmxInputs - 1) / kQ6kAmxInputs;
  rows.resize(static_cast<size_t>(passes * nb));
  for (int64_t p = 0; p < passes; ++p)
    for (int64_t b = 0; b < nb; ++b)
      q6k_diag_rows(x + p * kQ6kAmxInputs * nb, nb, b, static_cast<int>(std::min<int64_t>(kQ6kAmxInputs, n - p * kQ6kAmxInputs)),
                    rows[static_cast<size_t>(p * nb + b)]);
  return rows.data();
}

// Tiles 0-3: chunk q's group sums (4 rows per activation row, 16 i32 columns: weight rows); 4 and
// 6: a chunk's diagonal activation rows (4 per activation row x 64 bytes); 5 and 7: its codes (16
// rows of 4 elements x 16 weight rows). Every tile is 16 x 64 bytes.
inline void q6k_amx_configure() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.tile(t, 16, 64);
  c.load();
}

// Activation rows per pass over the weights: 4 passes of the tiles per block column.
constexpr int kQ6kAmxRows = 16;

// Every group's exact dots of one block column against one pass's activation rows: group 4q + jl
// of activation row g at sums[q][4 g + jl]. codes: chunk q's B tile at codes + 1024 q. Written out:
// GCC's tile intrinsics paste their register numbers into the instruction's text, so they take
// literals only (no template parameters); two A/B pairs alternate, so that a chunk's loads need not
// wait for the product before it.
inline void q6k_tile_dots(const uint8_t* codes, const Q6kDiagRows& a, int32_t (*sums)[16][16]) {
  _tile_loadd(4, a.q[0], 64);
  _tile_loadd(5, codes, 64);
  _tile_zero(0);
  _tile_dpbssd(0, 4, 5);
  _tile_loadd(6, a.q[1], 64);
  _tile_loadd(7, codes + 1024, 64);
  _tile_zero(1);
  _tile_dpbssd(1, 6, 7);
  _tile_loadd(4, a.q[2], 64);
  _tile_loadd(5, codes + 2048, 64);
  _tile_zero(2);
  _tile_dpbssd(2, 4, 5);
  _tile_loadd(6, a.q[3], 64);
  _tile_loadd(7, codes + 3072, 64);
  _tile_zero(3);
  _tile_dpbssd(3, 6, 7);
  _tile_stored(0, sums[0], 64);
  _tile_stored(1, sums[1], 64);
  _tile_stored(2, sums[2], 64);
  _tile_stored(3, sums[3], 64);
}

// A block column's codes less 32, group j's four quads (l-quads 4s .. 4s + 3 of quarter t of half
// h, j = 8h + 2t + s) at codes + 256 j.
inline void q6k_signed_codes(const uint8_t* col, uint8_t* codes) {
  const __m512i offset = _mm512_set1_epi8(32);
  for (int h = 0; h < 2; ++h)
    for (int v = 0; v < 8; ++v) {
      q6k_prefetch_quads(col, h, v);
      __m512i c[4];
      q6k_unpack(col, h, v, c);
      for (int t = 0; t < 4; ++t)
        _mm512_store_si512(codes + 256 * (8 * h + 2 * t + v / 4) + 64 * (v % 4), _mm512_sub_epi8(c[t], offset));
    }
}

// One group of 16 weight rows against `rows` (<= kQ6kAmxRows) activation rows, pass p's diagonal
// rows of block b at a[p * nb + b], row g's factors at x + g * xs, into y + g * ldy. Each block
// column's codes are unpacked once for all the passes.
inline void q6k_group_tiles(const uint8_t* grp, int64_t nb, const Q6kDiagRows* a, const ActQ8K* x, int64_t xs, int rows,
                            float* y, int64_t ldy) {
  alignas(64) uint8_t codes[16 * 256];
  alignas(64) int32_t dots[4][16][16];
  __m512 acc[kQ6kAmxRows];
  for (int g = 0; g < rows; ++g) acc[g] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = grp + static_cast<size_t>(b) * kQ6kGroupBlockBytes;
    prefetch_ahead(col + kQ6kScalePlanes, kQ6kGroupBlockBytes - kQ6kScalePlanes);
    q6k_signed_codes(col, codes);
    __m512i scale[16];
    for (int j = 0; j < 16; ++j) scale[j] = q6k_scales(col, j);
    for (int g0 = 0; g0 < rows; g0 += kQ6kAmxInputs) {
      tile_memory_fence();
      q6k_tile_dots(codes, a[g0 / kQ6kAmxInputs * nb + b], dots);
      tile_memory_fence();
      for (int g = g0; g < std::min(rows, g0 + kQ6kAmxInputs); ++g) {
        __m512i s = _mm512_setzero_si512();
        for (int j = 0; j < 16; ++j)
          s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_load_si512(dots[j / 4][4 * (g - g0) + j % 4]), scale[j]));
        acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), q6k_factors(col, x[g * xs + b].d), acc[g]);
      }
    }
  }
  for (int g = 0; g < rows; ++g) _mm512_storeu_ps(y + g * ldy, acc[g]);
}

// qgemv_q6k_x16_vnni's work where n >= 4 and int8_amx_active(): kQ6kAmxRows activation rows per
// pass over the weights.
void qgemv_q6k_x16_amx(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                       float* y, int64_t ldy) {
  const int64_t nb = in / 256;
  const auto* x = static_cast<const ActQ8K*>(xq);
  const Q6kDiagRows* diag = q6k_diag_activations(x, n, nb);
  q6k_amx_configure();
  for (int64_t g0 = 0; g0 < n; g0 += kQ6kAmxRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kQ6kAmxRows, n - g0));
    prefetch_lines(reinterpret_cast<uintptr_t>(w + static_cast<size_t>(r0) * rb),
                   std::min(kQPrefetchBytes, static_cast<size_t>(r1 - r0) * rb));
    for (int64_t r = r0; r < r1; r += kGroupRows)
      q6k_group_tiles(w + static_cast<size_t>(r) * rb, nb, diag + g0 / kQ6kAmxInputs * nb, x + g0 * nb, nb, rows,
                      y + g0 * ldy + r, ldy);
  }
}

}  // namespace
}  // namespace folio::kernels::detail

#pragma GCC pop_options
