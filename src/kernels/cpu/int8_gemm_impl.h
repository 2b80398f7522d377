// Internal: the body of the integer GEMM of int8_gemm.h, one template for every ISA. Include only
// from an ISA file (after its target pragma), inside no namespace.
//
// The traits G give: `bytes` (64 / kVecs bytes of one 16-row panel slice), `acc` (the matching
// int32 lanes), kVecs vectors per panel group of 4 inputs, a register tile of kRows rows x kPanels
// panels, and bcast4 / load / dot / zero / store. dot(c, u, s) adds, per int32 lane, the 4 products
// of the lane's u8 bytes of u and s8 bytes of s: the same exact integers on every ISA.
#pragma once

namespace folio::kernels::detail {
namespace {

// c[r * ldc + 16p + j] = sum over the panel's inputs of a[r * lda + k] * code, for a tile of R rows
// and P panels (panel_stride bytes apart), k4 groups of 4 inputs.
template <class G, int R, int P>
void int8_tile(const uint8_t* a, int64_t lda, const int8_t* w, int64_t panel_stride, int64_t k4, int32_t* c,
               int64_t ldc) {
  constexpr int V = G::kVecs;
  typename G::acc acc[R][P * V];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P * V; ++j) acc[r][j] = G::zero();
  for (int64_t g = 0; g < k4; ++g) {
    typename G::bytes wv[P * V];
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < V; ++v) wv[p * V + v] = G::load(w + p * panel_stride + g * 64 + v * (64 / V));
    for (int r = 0; r < R; ++r) {
      const typename G::bytes u = G::bcast4(a + r * lda + 4 * g);
      for (int j = 0; j < P * V; ++j) acc[r][j] = G::dot(acc[r][j], u, wv[j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < V; ++v) G::store(c + r * ldc + p * 16 + v * (16 / V), acc[r][p * V + v]);
}

// int8_tile with the row count r (1..R) and panel count p (1..P) known only at run time.
template <class G, int R, int P>
void int8_tile_any(int r, int p, const uint8_t* a, int64_t lda, const int8_t* w, int64_t panel_stride, int64_t k4,
                   int32_t* c, int64_t ldc) {
  if constexpr (R > 1) {
    if (r < R) return int8_tile_any<G, R - 1, P>(r, p, a, lda, w, panel_stride, k4, c, ldc);
  }
  if constexpr (P > 1) {
    if (p < P) return int8_tile_any<G, R, P - 1>(r, p, a, lda, w, panel_stride, k4, c, ldc);
  }
  int8_tile<G, R, P>(a, lda, w, panel_stride, k4, c, ldc);
}

// c [rows, panels * 16] int32 = a [rows, k] (u8, k a multiple of 4) times the panels' codes.
template <class G>
void gemm_int8_sums(const uint8_t* a, int64_t rows, int64_t k, const int8_t* panels, int64_t npanels, int32_t* c) {
  const int64_t panel_stride = k * 16, k4 = k / 4, ldc = npanels * 16;
  for (int64_t p0 = 0; p0 < npanels; p0 += G::kPanels) {
    const int p = static_cast<int>(std::min<int64_t>(G::kPanels, npanels - p0));
    for (int64_t r0 = 0; r0 < rows; r0 += G::kRows) {
      const int r = static_cast<int>(std::min<int64_t>(G::kRows, rows - r0));
      int8_tile_any<G, G::kRows, G::kPanels>(r, p, a + r0 * k, k, panels + p0 * panel_stride, panel_stride, k4,
                                             c + r0 * ldc + p0 * 16, ldc);
    }
  }
}

}  // namespace
}  // namespace folio::kernels::detail
