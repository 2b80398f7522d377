// Internal to kernels_avx512_vnni.cpp (include it there only, after q4k_x16_vnni.h, whose helpers
// it uses): the decode product over q6_k rows interleaved in groups of 16 (core/row_interleave.h),
// one 32-bit lane per row.
//
// It keeps the q6_k contract (quant_dot_impl.h, "q6_k"): each row's block integer S is the sum over
// groups j of 16 elements of scale_j times D_j, the dot of the group's codes with the activations
// less 32 times their sum. Here D_j of 16 rows starts at -32 X_j (X_j: the activations' 16-sum) and
// takes 4 vpdpbusd (a quad of codes of the 16 rows against 4 activation bytes broadcast), and S adds
// scale_j D_j (vpmulld); S is exact, so the block's one FMA gives every row the q6_k product's bits.
// Per 16 rows and block: the codes unpacked once (13 instructions per 4 quads), then 64 vpdpbusd and
// 16 vpmulld per activation row; the row-by-row kernel also sums each row's lanes and unpacks the
// scales per row (the LM head's product of four rows streamed below memory's rate so).
#pragma once

namespace folio::kernels::detail {
namespace {

// Where a q6_k block column's fields start (core/row_interleave.h).
constexpr size_t kQ6kQhQuads = 2048, kQ6kScalePlanes = 3072, kQ6kFactors = 3328;

// The codes of l-quad v (elements 4v .. 4v + 3 of each 32) of half h of a block column, one vector
// per quarter t (elements 128h + 32t + 4v ..): 6 bits, the low 4 from ql (quarters 0 and 2: quad
// 16h + v, low and high nibbles; 1 and 3: quad 16h + 8 + v), the top 2 from bits 2t, 2t + 1 of the
// qh quad 8h + v.
inline void q6k_unpack(const uint8_t* col, int h, int v, __m512i c[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
  const __m512i a = _mm512_loadu_si512(col + 64 * (16 * h + v));
  const __m512i b = _mm512_loadu_si512(col + 64 * (16 * h + 8 + v));
  const __m512i q = _mm512_loadu_si512(col + kQ6kQhQuads + 64 * (8 * h + v));
  // 0xCA: bits 4-5 from the second operand (the shifted qh), the rest from the third (the nibble).
  c[0] = _mm512_ternarylogic_epi32(top2, _mm512_slli_epi16(q, 4), _mm512_and_si512(a, low4), 0xCA);
  c[1] = _mm512_ternarylogic_epi32(top2, _mm512_slli_epi16(q, 2), _mm512_and_si512(b, low4), 0xCA);
  c[2] = _mm512_ternarylogic_epi32(top2, q, _mm512_and_si512(_mm512_srli_epi16(a, 4), low4), 0xCA);
  c[3] = _mm512_ternarylogic_epi32(top2, _mm512_srli_epi16(q, 2), _mm512_and_si512(_mm512_srli_epi16(b, 4), low4), 0xCA);
}

// The lines q6k_unpack(col, h, v) reads, a prefetch distance ahead: a column's 53 lines asked for
// at once stream slower (q4k_x16_vnni.h has the same).
inline void q6k_prefetch_quads(const uint8_t* col, int h, int v) {
  prefetch_quad(col + 64 * (16 * h + v));
  prefetch_quad(col + 64 * (16 * h + 8 + v));
  prefetch_quad(col + kQ6kQhQuads + 64 * (8 * h + v));
}

// Group j's scales of the 16 rows as i32 lanes.
inline __m512i q6k_scales(const uint8_t* col, int j) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col + kQ6kScalePlanes + 16 * j)));
}

// The block's factor d_w d_x of the 16 rows, one rounded product each (the contract's).
inline __m512 q6k_factors(const uint8_t* col, float dx) {
  return _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + kQ6kFactors))),
                       _mm512_set1_ps(dx));
}

// The 8 groups of half h against one activation row into s: D_j from codes(v) (quarter t's codes
// of l-quad v, as q6k_unpack gives them).
template <class Codes>
inline __m512i q6k_half_sum(const uint8_t* col, int h, const ActQ8K& a, __m512i s, Codes codes) {
  __m512i d[8];  // group 8h + 2t + v / 4
  for (int k = 0; k < 8; ++k) d[k] = _mm512_set1_epi32(-32 * a.bsums[8 * h + k]);
  for (int v = 0; v < 8; ++v) {
    const __m512i* c = codes(v);
    for (int t = 0; t < 4; ++t) d[2 * t + v / 4] = _mm512_dpbusd_epi32(d[2 * t + v / 4], c[t], bcast4(a.q + 128 * h + 32 * t + 4 * v));
  }
  for (int k = 0; k < 8; ++k) s = _mm512_add_epi32(s, _mm512_mullo_epi32(d[k], q6k_scales(col, 8 * h + k)));
  return s;
}

// One activation row: the codes unpacked as they are read, each quad's line prefetched then.
inline __m512 q6k_group_dot(const uint8_t* grp, int64_t nb, const ActQ8K* x) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = grp + static_cast<size_t>(b) * kQ6kGroupBlockBytes;
    prefetch_ahead(col + kQ6kScalePlanes, kQ6kGroupBlockBytes - kQ6kScalePlanes);
    __m512i s = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      __m512i c[4];
      s = q6k_half_sum(col, h, x[b], s, [&](int v) {
        q6k_prefetch_quads(col, h, v);
        q6k_unpack(col, h, v, c);
        return c;
      });
    }
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), q6k_factors(col, x[b].d), acc);
  }
  return acc;
}

// Several activation rows: each block column's codes unpacked once, into L1, for all of them.
template <int G>
inline void q6k_group_dots(const uint8_t* grp, int64_t nb, const ActQ8K* x, int64_t xs, __m512 out[G]) {
  __m512 acc[G];
  for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = grp + static_cast<size_t>(b) * kQ6kGroupBlockBytes;
    prefetch_ahead(col + kQ6kScalePlanes, kQ6kGroupBlockBytes - kQ6kScalePlanes);
    __m512i codes[2][8][4];
    for (int h = 0; h < 2; ++h)
      for (int v = 0; v < 8; ++v) {
        q6k_prefetch_quads(col, h, v);
        q6k_unpack(col, h, v, codes[h][v]);
      }
    for (int g = 0; g < G; ++g) {
      const ActQ8K& a = x[g * xs + b];
      __m512i s = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) s = q6k_half_sum(col, h, a, s, [&](int v) { return codes[h][v]; });
      acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), q6k_factors(col, a.d), acc[g]);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = acc[g];
}

// Four activation rows and more on AMX tiles where the CPU has them (q6k_x16_amx.h, included after
// this; declared with the target it is defined with, as q4k_x16_vnni.h does). With two or three the
// VNNI kernel below is faster (docs/benchmarks.md).
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")
void qgemv_q6k_x16_amx(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                       float* y, int64_t ldy);
#pragma GCC pop_options

// KernelTable::qgemv[Q6_K_X16].
void qgemv_q6k_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                        float* y, int64_t ldy) {
  if (n >= 4 && int8_amx_active()) {
    qgemv_q6k_x16_amx(w, rb, in, r0, r1, xq, n, y, ldy);
    return;
  }
  const int64_t nb = in / 256;
  const auto* x = static_cast<const ActQ8K*>(xq);
  x16_groups_by_inputs(w, rb, r0, r1, n, y, ldy, [&](auto rows, const uint8_t* grp, int64_t g0, __m512* out) {
    if constexpr (rows == 1) out[0] = q6k_group_dot(grp, nb, x + g0 * nb);
    else q6k_group_dots<rows>(grp, nb, x + g0 * nb, nb, out);
  });
}

}  // namespace
}  // namespace folio::kernels::detail
