// Internal to kernels_avx512_vnni.cpp (include it there only, after q4k_x16_vnni.h, whose helpers
// it uses): the decode product over q8_0 and q5_0 rows interleaved in groups of 16
// (core/row_interleave.h), one 32-bit lane per row.
//
// It keeps the blocks of 32's contract (quant_dot_impl.h): each row's block integer S, block b's
// FMA into chain b % 8, the chains summed in hsum's order. Here S of 16 rows is 8 vpdpbusd (a quad
// of codes of the 16 rows, unsigned, against 4 activation bytes broadcast) from a start that takes
// the codes' offset off (-K times the activation block's code sum: q8_0's codes flipped by 128,
// q5_0's stored with 16 added), and a chain is a vector of 16 rows; S is exact, so every row gets
// the row kernel's bits. Per 16 rows and block: the codes made once (q5_0: nibbles split and fifth
// bits added), then 8 vpdpbusd, a conversion and an FMA per activation row, where the row kernel
// spends those on each row and sums each row's lanes.
#pragma once

namespace folio::kernels::detail {
namespace {

// -K times the code sum of each activation row's blocks (n rows of nb), in a buffer of the calling
// thread's, valid until its next call.
template <int K>
const int32_t* q32_block_starts(const ActQ8* x, int64_t n, int64_t nb) {
  thread_local std::vector<int32_t> starts;
  starts.resize(static_cast<size_t>(n * nb));
  for (int64_t i = 0; i < n * nb; ++i) {
    int32_t sum = 0;
    for (int8_t q : x[i].q) sum += q;
    starts[static_cast<size_t>(i)] = -K * sum;
  }
  return starts.data();
}

// q8_0: d (32 bytes), then 8 quads of signed codes, flipped to unsigned.
struct Q8x16 {
  static constexpr size_t kColumn = kQ8GroupBlockBytes;
  static constexpr int kOffset = 128;
  static void codes(const uint8_t* col, __m512i c[8]) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int k = 0; k < 8; ++k) c[k] = _mm512_xor_si512(_mm512_loadu_si512(col + 32 + 64 * k), flip);
  }
};

// q5_0: d (32 bytes), the 16 rows' qh words (64), 4 quads of qs: quad k's low nibbles are elements
// 4k .. 4k + 3, its high nibbles 16 + 4k ..; element e's fifth bit is bit e of its row's word.
struct Q5x16 {
  static constexpr size_t kColumn = kQ5GroupBlockBytes;
  static constexpr int kOffset = 16;
  static void codes(const uint8_t* col, __m512i c[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    for (int k = 0; k < 4; ++k) {
      const __m512i v = _mm512_loadu_si512(col + 96 + 64 * k);
      c[k] = _mm512_and_si512(v, low4);
      c[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    }
    const __m512i qh = _mm512_loadu_si512(col + 32);
    for (int m = 0; m < 8; ++m) {
      // Elements 4m .. 4m + 3: byte m / 2 of each word into the word's 4 bytes, byte j tested for
      // bit 4 (m % 2) + j.
      const int j = m / 2;
      const __m512i pick = _mm512_broadcast_i32x4(
          _mm_setr_epi32(j * 0x01010101, (4 + j) * 0x01010101, (8 + j) * 0x01010101, (12 + j) * 0x01010101));
      const __m512i bits = _mm512_set1_epi32(m % 2 ? static_cast<int>(0x80402010u) : 0x08040201);
      const __mmask64 set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, pick), bits);
      c[m] = _mm512_mask_add_epi8(c[m], set, c[m], sixteen);
    }
  }
};

// One group of 16 weight rows against G activation rows (row g's blocks at x + g xs, its starts at
// starts + g xs) into out[g].
template <class F, int G>
inline void q32_group_dots(const uint8_t* grp, int64_t nb, const ActQ8* x, const int32_t* starts, int64_t xs,
                           __m512* out) {
  __m512 chains[G][8];
  for (int g = 0; g < G; ++g)
    for (int c = 0; c < 8; ++c) chains[g][c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = grp + static_cast<size_t>(b) * F::kColumn;
    prefetch_ahead(col, F::kColumn);
    __m512i c[8];
    F::codes(col, c);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(col)));
    for (int g = 0; g < G; ++g) {
      const ActQ8& a = x[g * xs + b];
      __m512i s = _mm512_set1_epi32(starts[g * xs + b]);
      for (int k = 0; k < 8; ++k) s = _mm512_dpbusd_epi32(s, c[k], bcast4(a.q + 4 * k));
      __m512& chain = chains[g][b % 8];
      chain = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(a.d)), chain);
    }
  }
  for (int g = 0; g < G; ++g) {
    const __m512* ch = chains[g];
    out[g] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(ch[0], ch[4]), _mm512_add_ps(ch[2], ch[6])),
                           _mm512_add_ps(_mm512_add_ps(ch[1], ch[5]), _mm512_add_ps(ch[3], ch[7])));
  }
}

template <class F>
void qgemv_q32_x16(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n, float* y,
                   int64_t ldy) {
  const int64_t nb = in / 32;
  const auto* x = static_cast<const ActQ8*>(xq);
  const int32_t* starts = q32_block_starts<F::kOffset>(x, n, nb);
  x16_groups_by_inputs(w, rb, r0, r1, n, y, ldy, [&](auto rows, const uint8_t* grp, int64_t g0, __m512* out) {
    q32_group_dots<F, rows>(grp, nb, x + g0 * nb, starts + g0 * nb, nb, out);
  });
}

// KernelTable::qgemv[Q8_0_X16] and [Q5_0_X16].
void qgemv_q8_0_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                         float* y, int64_t ldy) {
  qgemv_q32_x16<Q8x16>(w, rb, in, r0, r1, xq, n, y, ldy);
}
void qgemv_q5_0_x16_vnni(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n,
                         float* y, int64_t ldy) {
  qgemv_q32_x16<Q5x16>(w, rb, in, r0, r1, xq, n, y, ldy);
}

}  // namespace
}  // namespace folio::kernels::detail
