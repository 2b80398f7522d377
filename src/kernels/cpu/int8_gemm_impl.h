// Internal: the body of the integer GEMM of int8_gemm.h, one template for every ISA. Include only
// from an ISA file (after its target pragma), inside no namespace.
//
// The traits G give, for the GEMM: `bytes` (64 / kVecs bytes of one 16-row panel slice), `acc` (the
// matching int32 lanes), kVecs vectors per panel group of 4 inputs, a register tile of kRows rows x
// kPanels panels, and bcast4 / load / dot / zero / store; dot(c, u, s) adds, per int32 lane, the 4
// products of the lane's u8 bytes of u and s8 bytes of s: the same exact integers on every ISA. For
// the quantiser: `ints` of kFloats lanes with zero_ints / bits_of (float bits as int32) / max_ints /
// hmax, and codes (quantize_u7's codes of kFloats values).
#pragma once

namespace folio::kernels::detail {
namespace {

// What one call multiplies: rows `lda` bytes apart, each `taps` runs of `tap_len` codes.
struct Int8Rows {
  const uint8_t* a;
  int64_t lda;
  const int64_t* tap_offsets;
  int64_t taps, tap_len;
};

// c[r * ldc + 16p + j] = sum over the inputs of row r times the codes of panel p, row j, for a tile
// of R rows and P panels (panel_stride bytes apart).
template <class G, int R, int P>
void int8_tile(const Int8Rows& in, const int8_t* w, int64_t panel_stride, int32_t* c, int64_t ldc) {
  constexpr int V = G::kVecs;
  typename G::acc acc[R][P * V];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P * V; ++j) acc[r][j] = G::zero();
  for (int64_t t = 0; t < in.taps; ++t) {
    const uint8_t* a = in.a + in.tap_offsets[t];
    const int8_t* wt = w + t * in.tap_len * 16;  // the tap's groups of 4 inputs, 64 bytes each
    for (int64_t g = 0; g < in.tap_len / 4; ++g) {
      typename G::bytes wv[P * V];
      for (int p = 0; p < P; ++p)
        for (int v = 0; v < V; ++v) wv[p * V + v] = G::load(wt + p * panel_stride + g * 64 + v * (64 / V));
      for (int r = 0; r < R; ++r) {
        const typename G::bytes u = G::bcast4(a + r * in.lda + 4 * g);
        for (int j = 0; j < P * V; ++j) acc[r][j] = G::dot(acc[r][j], u, wv[j]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      for (int v = 0; v < V; ++v) G::store(c + r * ldc + p * 16 + v * (16 / V), acc[r][p * V + v]);
}

// int8_tile with the row count r (1..R) and panel count p (1..P) known only at run time.
template <class G, int R, int P>
void int8_tile_any(int r, int p, const Int8Rows& in, const int8_t* w, int64_t panel_stride, int32_t* c, int64_t ldc) {
  if constexpr (R > 1) {
    if (r < R) return int8_tile_any<G, R - 1, P>(r, p, in, w, panel_stride, c, ldc);
  }
  if constexpr (P > 1) {
    if (p < P) return int8_tile_any<G, R, P - 1>(r, p, in, w, panel_stride, c, ldc);
  }
  int8_tile<G, R, P>(in, w, panel_stride, c, ldc);
}

// kernel_table.h's GemmInt8SumsFn.
template <class G>
void gemm_int8_sums(const uint8_t* a, int64_t rows, int64_t lda, const int64_t* tap_offsets, int64_t taps,
                    int64_t tap_len, const int8_t* panels, int64_t npanels, int32_t* c) {
  const int64_t panel_stride = taps * tap_len * 16, ldc = npanels * 16;
  for (int64_t p0 = 0; p0 < npanels; p0 += G::kPanels) {
    const int p = static_cast<int>(std::min<int64_t>(G::kPanels, npanels - p0));
    for (int64_t r0 = 0; r0 < rows; r0 += G::kRows) {
      const int r = static_cast<int>(std::min<int64_t>(G::kRows, rows - r0));
      const Int8Rows in{a + r0 * lda, lda, tap_offsets, taps, tap_len};
      int8_tile_any<G, G::kRows, G::kPanels>(r, p, in, panels + p0 * panel_stride, panel_stride, c + r0 * ldc + p0 * 16,
                                             ldc);
    }
  }
}

// kernel_table.h's MaxBitsFn: whole vectors, then the tail from a zero-padded copy.
template <class G>
int32_t max_bits(const float* x, int64_t n) {
  typename G::ints m = G::zero_ints();
  int64_t i = 0;
  for (; i + G::kFloats <= n; i += G::kFloats) m = G::max_ints(m, G::bits_of(x + i));
  float tail[G::kFloats] = {};
  std::copy(x + i, x + n, tail);
  return G::hmax(G::max_ints(m, G::bits_of(tail)));
}

// kernel_table.h's QuantizeU7Fn, the same way.
template <class G>
void quantize_u7(const float* x, int64_t n, float inv, uint8_t* q) {
  int64_t i = 0;
  for (; i + G::kFloats <= n; i += G::kFloats) G::codes(x + i, inv, q + i);
  float tail[G::kFloats] = {};
  uint8_t out[G::kFloats];
  std::copy(x + i, x + n, tail);
  G::codes(tail, inv, out);
  std::copy(out, out + (n - i), q + i);
}

}  // namespace
}  // namespace folio::kernels::detail
