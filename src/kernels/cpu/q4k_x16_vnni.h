// Internal to kernels_avx512_vnni.cpp (include it there only, after its target pragma): the decode
// product over q4_k rows interleaved in groups of 16 (core/row_interleave.h), one 32-bit lane per row.
//
// It keeps the q4_k contract (quant_dot_impl.h, "q4_k, q5_k"): acc[k] holds, for 16 rows, the sum
// over sub-blocks j of scale_j times the 4-element dot of elements 4k .. 4k + 3 of sub-block j,
// built by maddubs (pairs) and dpwssd (times the scale, pairs added) from one quad of codes and the
// 4 activation bytes broadcast; the 8 vectors added are each row's exact S, and the floats take the
// contract's two FMAs, so every row gets the q4_k product's bits.
// Per 16 rows and block: 64 maddubs + 64 dpwssd, one scale unpacking, 2 FMAs and conversions,
// where the row-by-row kernel spends about 50 instructions on each row's block.

namespace folio::kernels::detail {
namespace {

// Sub-block j's scales (sc[j]) and minima (m[j]) of 16 rows, a byte per row, from the 12 planes
// (scale_min_k4's unpacking on 16 rows at once).
struct GroupScalesK4 {
  __m128i sc[8], m[8];
  explicit GroupScalesK4(const uint8_t* planes) {
    __m128i s[12];
    for (int p = 0; p < 12; ++p) s[p] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 16 * p));
    const __m128i low6 = _mm_set1_epi8(63), low4 = _mm_set1_epi8(15), top2 = _mm_set1_epi8(0x30);
    for (int j = 0; j < 4; ++j) {
      sc[j] = _mm_and_si128(s[j], low6);
      m[j] = _mm_and_si128(s[j + 4], low6);
      // The top 2 bits of bytes j / j + 4 become bits 4-5: (b >> 6) << 4 = (b >> 2) & 0x30.
      sc[j + 4] = _mm_or_si128(_mm_and_si128(s[j + 8], low4), _mm_and_si128(_mm_srli_epi16(s[j], 2), top2));
      m[j + 4] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(s[j + 8], 4), low4), _mm_and_si128(_mm_srli_epi16(s[j + 4], 2), top2));
    }
  }
};

// 16 bytes as 16 i32 lanes holding the byte in both i16 halves (a dpwssd multiplier per row).
inline __m512i byte_pairs(__m128i b) {
  const __m512i v = _mm512_cvtepu8_epi32(b);
  return _mm512_or_si512(v, _mm512_slli_epi32(v, 16));
}

// Lanes: bytes a in the low i16 half, b in the high one.
inline __m512i two_bytes(__m128i a, __m128i b) {
  return _mm512_or_si512(_mm512_cvtepu8_epi32(a), _mm512_slli_epi32(_mm512_cvtepu8_epi32(b), 16));
}

inline __m512i bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The sum of 8 vectors of exact i32 lanes (any order: integers).
inline __m512i add8(const __m512i v[8]) {
  return _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(v[0], v[1]), _mm512_add_epi32(v[2], v[3])),
                          _mm512_add_epi32(_mm512_add_epi32(v[4], v[5]), _mm512_add_epi32(v[6], v[7])));
}

// A group's two floats per row against one activation row (quant_dot_impl.h's K4Sums, a row per
// lane): each block's exact S and M of the 16 rows, taken with one FMA each.
struct GroupSumsK4 {
  __m512 scaled, minima;
  GroupSumsK4() : scaled(_mm512_setzero_ps()), minima(_mm512_setzero_ps()) {}
  // A block's exact S of 16 rows, its minima pairs (sub-blocks 2k, 2k + 1) and its d, dmin.
  void add(__m512i s, const __m512i mins[4], __m512 d, __m512 dmin, const ActQ8K& a) {
    const __m512 ad = _mm512_set1_ps(a.d);
    const __m512 dv = _mm512_mul_ps(d, ad), mv = _mm512_xor_ps(_mm512_mul_ps(dmin, ad), _mm512_set1_ps(-0.0f));
    __m512i m = _mm512_madd_epi16(mins[0], bcast4(a.bsums32));
    for (int k = 1; k < 4; ++k) m = _mm512_add_epi32(m, _mm512_madd_epi16(mins[k], bcast4(a.bsums32 + 2 * k)));
    scaled = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dv, scaled);
    minima = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), mv, minima);
  }
  __m512 result() const { return _mm512_add_ps(scaled, minima); }
};

// A group's block column: minima pairs and the two f16 factors, as GroupSumsK4::add takes them.
struct GroupFactorsK4 {
  GroupScalesK4 s;
  __m512i mins[4];
  __m512 d, dmin;
  explicit GroupFactorsK4(const uint8_t* col)
      : s(col + 64),
        d(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(col)))),
        dmin(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + 32)))) {
    for (int k = 0; k < 4; ++k) mins[k] = two_bytes(s.m[2 * k], s.m[2 * k + 1]);
  }
};

inline const uint8_t* group_column(const uint8_t* grp, int64_t b) {
  const uint8_t* col = grp + static_cast<size_t>(b) * kQ4kGroupBlockBytes;
  prefetch_ahead(col, kQ4kGroupBlockBytes);
  return col;
}

// The same for one activation row, whose column is read once: only the factors and scales here,
// the codes a line at a time as they are read (prefetch_quad). A column's 36 lines asked for at
// once streamed 25-30% slower than these (docs/benchmarks.md).
constexpr size_t kQ4kGroupHeadBytes = 256;
inline const uint8_t* group_column_head(const uint8_t* grp, int64_t b) {
  const uint8_t* col = grp + static_cast<size_t>(b) * kQ4kGroupBlockBytes;
  prefetch_ahead(col, kQ4kGroupHeadBytes);
  return col;
}
inline void prefetch_quad(const uint8_t* quad) { prefetch_line(reinterpret_cast<uintptr_t>(quad) + kQPrefetchBytes); }

// One activation row: each quad's nibbles split as they are loaded.
inline __m512 q4k_group_dot(const uint8_t* grp, int64_t nb, const ActQ8K* x) {
  GroupSumsK4 sums;
  const __m512i nib = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group_column_head(grp, b);
    const ActQ8K& a = x[b];
    const GroupFactorsK4 f(col);
    const uint8_t* quads = col + kQ4kGroupHeadBytes;
    __m512i acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      const __m512i s_lo = byte_pairs(f.s.sc[2 * i]), s_hi = byte_pairs(f.s.sc[2 * i + 1]);
      for (int k = 0; k < 8; ++k) {
        const uint8_t* quad = quads + 64 * (8 * i + k);
        prefetch_quad(quad);
        const __m512i v = _mm512_loadu_si512(quad);
        const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        acc[k] = _mm512_dpwssd_epi32(acc[k], _mm512_maddubs_epi16(lo, bcast4(a.q + 64 * i + 4 * k)), s_lo);
        acc[k] = _mm512_dpwssd_epi32(acc[k], _mm512_maddubs_epi16(hi, bcast4(a.q + 64 * i + 32 + 4 * k)), s_hi);
      }
    }
    sums.add(add8(acc), f.mins, f.d, f.dmin, a);
  }
  return sums.result();
}

// Several activation rows (sequences decoded together): each block column's codes are split and
// its scales widened once, into L1, and every row reads them from there.
constexpr int kGroupInputs = 4;

template <int G>
inline void q4k_group_dots(const uint8_t* grp, int64_t nb, const ActQ8K* x, int64_t xs, __m512 out[G]) {
  GroupSumsK4 sums[G];
  const __m512i nib = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group_column(grp, b);
    const GroupFactorsK4 f(col);
    __m512i codes[64], scale[8];  // quad q's low nibbles at 2q, high at 2q + 1; sub-block j's multiplier
    for (int q = 0; q < 32; ++q) {
      const __m512i v = _mm512_loadu_si512(col + 256 + 64 * q);
      codes[2 * q] = _mm512_and_si512(v, nib);
      codes[2 * q + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
    }
    for (int j = 0; j < 8; ++j) scale[j] = byte_pairs(f.s.sc[j]);
    for (int g = 0; g < G; ++g) {
      const ActQ8K& a = x[g * xs + b];
      __m512i acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 8; ++k) {
          const int q = 8 * i + k;
          acc[k] = _mm512_dpwssd_epi32(acc[k], _mm512_maddubs_epi16(codes[2 * q], bcast4(a.q + 64 * i + 4 * k)), scale[2 * i]);
          acc[k] = _mm512_dpwssd_epi32(acc[k], _mm512_maddubs_epi16(codes[2 * q + 1], bcast4(a.q + 64 * i + 32 + 4 * k)),
                                       scale[2 * i + 1]);
        }
      sums[g].add(add8(acc), f.mins, f.d, f.dmin, a);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = sums[g].result();
}

// Two activation rows and more on AMX tiles where the CPU has them (q4k_x16_amx.h, below; declared
// with the target it is defined with, else GCC takes the two for different versions of it).
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8")
void qgemv_q4k_x16_amx(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                       float* y, int64_t ldy);
#pragma GCC pop_options

// The interleaved products' walk (this file's, q6k_x16_vnni.h's, q32_x16_vnni.h's): every group of
// 16 weight rows in [r0, r1) (whole groups) against the n activation rows in passes of up to
// kGroupInputs; pass(std::integral_constant<int, G>, group, g0, out) writes the pass's G rows of 16
// outputs (activation rows g0 .. g0 + G - 1), G a constant so that each count is its own kernel.
template <class Pass>
void x16_groups_by_inputs(const uint8_t* w, size_t rb, int64_t r0, int64_t r1, int64_t n, float* y, int64_t ldy,
                          const Pass& pass) {
  prefetch_lines(reinterpret_cast<uintptr_t>(w + static_cast<size_t>(r0) * rb),
                 std::min(kQPrefetchBytes, static_cast<size_t>(r1 - r0) * rb));
  for (int64_t r = r0; r < r1; r += kGroupRows) {
    const uint8_t* grp = w + static_cast<size_t>(r) * rb;
    for (int64_t g0 = 0; g0 < n; g0 += kGroupInputs) {
      __m512 out[kGroupInputs];
      const int count = static_cast<int>(std::min<int64_t>(kGroupInputs, n - g0));
      if (count == 4) pass(std::integral_constant<int, 4>{}, grp, g0, out);
      else if (count == 3) pass(std::integral_constant<int, 3>{}, grp, g0, out);
      else if (count == 2) pass(std::integral_constant<int, 2>{}, grp, g0, out);
      else pass(std::integral_constant<int, 1>{}, grp, g0, out);
      for (int g = 0; g < count; ++g) _mm512_storeu_ps(y + (g0 + g) * ldy + r, out[g]);
    }
  }
}

// KernelTable::qgemv[Q4_K_X16].
void qgemv_q4k_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                        float* y, int64_t ldy) {
  if (n >= 2 && int8_amx_active()) {
    qgemv_q4k_x16_amx(w, rb, in, r0, r1, xq, n, y, ldy);
    return;
  }
  const int64_t nb = in / 256;
  const auto* x = static_cast<const ActQ8K*>(xq);
  x16_groups_by_inputs(w, rb, r0, r1, n, y, ldy, [&](auto rows, const uint8_t* grp, int64_t g0, __m512* out) {
    if constexpr (rows == 1) out[0] = q4k_group_dot(grp, nb, x + g0 * nb);
    else q4k_group_dots<rows>(grp, nb, x + g0 * nb, nb, out);
  });
}

}  // namespace
}  // namespace folio::kernels::detail
