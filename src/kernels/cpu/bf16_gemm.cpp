#include "kernels/cpu/bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/row_interleave.h"
#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

bool bf16_gemm_supported() {
#if defined(__x86_64__)
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bf16");
  }();
  return ok;
#else
  return false;
#endif
}

namespace {

std::atomic<bool> g_amx_enabled{true};

}  // namespace

bool bf16_amx_supported() {
  static const bool ok = bf16_gemm_supported() && amx_granted(AmxType::Bf16);
  return ok;
}

bool bf16_amx_active() { return g_amx_enabled.load(std::memory_order_relaxed) && bf16_amx_supported(); }

void set_bf16_amx(bool enabled) { g_amx_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace folio::kernels

// Everything below runs only where bf16_gemm_supported() (the header's precondition).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
// GCC bug 105593: its AVX-512 intrinsics' pass-through operands trip these (as in kernels_avx512.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/bf16_amx.h"
#include "kernels/cpu/bf16_micro_kernel_avx512.h"
#include "kernels/cpu/bf16_pairs_avx512.h"
#include "kernels/cpu/transpose_avx512.h"
#include "kernels/cpu/vec_avx512.h"
#include "kernels/cpu/vec_activations.h"

namespace folio::kernels {

namespace {

using detail::lane_mask;
using detail::micro_kernel;
using detail::transpose16;
constexpr int64_t MR = kBf16PanelRows, NR = kBf16PanelCols;
// Rows assign_transposed fetches ahead of the pair it packs (both rows of the pair that far ahead).
constexpr int64_t kPrefetchRows = 8;

// src[0, in) rounded to bf16 (round to nearest even, as vcvtne2ps2bf16 does) as ceil(in / 2) words,
// element 2p in the low half of word p; an odd last element is paired with zero.
void round_to_pairs(const float* src, int64_t in, uint32_t* pairs) {
  int64_t k = 0;
  for (; k + 32 <= in; k += 32) {
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + k + 16), _mm512_loadu_ps(src + k));
    _mm512_storeu_si512(pairs + k / 2, reinterpret_cast<__m512i>(b));
  }
  if (k < in) {
    const int64_t left = in - k;
    const __mmask16 lo = static_cast<__mmask16>((left >= 16) ? 0xffff : (1u << left) - 1);
    const __mmask16 hi = static_cast<__mmask16>((left <= 16) ? 0 : (1u << (left - 16)) - 1);
    const __m512bh b =
        _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, src + k + 16), _mm512_maskz_loadu_ps(lo, src + k));
    const int64_t words = (left + 1) / 2;
    _mm512_mask_storeu_epi32(pairs + k / 2, static_cast<__mmask16>((1u << words) - 1), reinterpret_cast<__m512i>(b));
  }
}

// Writes `live` rows (src[r]: `pairs` pair words each) into a panel of `width` rows (the word of
// row r and pair p at p * width + r), 16 rows by 16 pairs at a time through transpose16; rows from
// `live` to `width` come out zero. Activation panels are MR wide, weight panels NR.
void write_panel(const uint32_t* const* src, int64_t live, int64_t pairs, int64_t width, uint32_t* panel) {
  for (int64_t h = 0; h < width; h += 16) {
    const __mmask16 rows = lane_mask(width - h);
    for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
      const int64_t count = std::min<int64_t>(16, pairs - p0);
      const __mmask16 m = lane_mask(count);
      __m512i v[16];
      for (int64_t i = 0; i < 16; ++i)
        v[i] = h + i < live ? _mm512_maskz_loadu_epi32(m, src[h + i] + p0) : _mm512_setzero_si512();
      transpose16(v);
      for (int64_t k = 0; k < count; ++k) _mm512_mask_storeu_epi32(panel + (p0 + k) * width + h, rows, v[k]);
    }
  }
}

// The sums start from zero, or from bias[0..NR) given `bias` (a linear layer's bias as their first
// term): the two starting vectors.
struct BiasStart {
  __m512 lo, hi;
  BiasStart(const float* bias, __mmask16 cols_lo, __mmask16 cols_hi)
      : lo(bias ? _mm512_maskz_loadu_ps(cols_lo, bias) : _mm512_setzero_ps()),
        hi(bias ? _mm512_maskz_loadu_ps(cols_hi, bias + 16) : _mm512_setzero_ps()) {}
};

// One block of Y in f32: its `rows` <= MR rows and the columns in cols_lo / cols_hi are stored.
// With kAccumulate the sums start from Y's current values (f32 stored and reloaded exactly, so a
// sum split over several calls has the bits of one call), else from BiasStart.
template <bool kAccumulate>
void block_to_f32(const uint32_t* a, const uint32_t* b, int64_t pairs, float* y, int64_t ldy, int64_t rows,
                  __mmask16 cols_lo, __mmask16 cols_hi, const float* bias) {
  const BiasStart s(bias, cols_lo, cols_hi);
  detail::Bf16Sums acc0, acc1;
#pragma GCC unroll 14
  for (int m = 0; m < MR; ++m) {
    const bool reload = kAccumulate && m < rows;
    acc0[m] = reload ? _mm512_maskz_loadu_ps(cols_lo, y + m * ldy) : s.lo;
    acc1[m] = reload ? _mm512_maskz_loadu_ps(cols_hi, y + m * ldy + 16) : s.hi;
  }
  micro_kernel(a, b, pairs, acc0, acc1);
  for (int64_t m = 0; m < rows; ++m) {
    _mm512_mask_storeu_ps(y + m * ldy, cols_lo, acc0[m]);
    _mm512_mask_storeu_ps(y + m * ldy + 16, cols_hi, acc1[m]);
  }
}

// One block of Y rounded to bf16: its `rows` <= MR rows, the columns in cols_lo / cols_hi stored.
void block_to_bf16(const uint32_t* a, const uint32_t* b, int64_t pairs, uint16_t* y, int64_t ldy, int64_t rows,
                   __mmask16 cols_lo, __mmask16 cols_hi, const float* bias) {
  const BiasStart s(bias, cols_lo, cols_hi);
  detail::Bf16Sums acc0, acc1;
#pragma GCC unroll 14
  for (int m = 0; m < MR; ++m) acc0[m] = s.lo, acc1[m] = s.hi;
  micro_kernel(a, b, pairs, acc0, acc1);
  const __mmask32 cols = static_cast<__mmask32>(cols_lo) | (static_cast<__mmask32>(cols_hi) << 16);
  for (int64_t m = 0; m < rows; ++m)
    _mm512_mask_storeu_epi16(y + m * ldy, cols, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(acc1[m], acc0[m])));
}

__m512 activate(Activation act, __m512 v) {
  return act == Activation::GeluErf ? detail::gelu_erf_of<detail::VAvx512>(v) : detail::quick_gelu_of<detail::VAvx512>(v);
}

// One block as bf16 activations: act(sums) of the columns in cols_lo / cols_hi (the others zero),
// each row's 32 columns rounded into 16 pair words (as Bf16Activations packs them) and written to
// word p * MR + m of `dst` (the output panel at the block's first pair), `rows` rows live and the
// rest of the panel's MR rows zero.
void block_to_activations(const uint32_t* a, const uint32_t* b, int64_t pairs, uint32_t* dst, int64_t rows,
                          __mmask16 cols_lo, __mmask16 cols_hi, const float* bias, Activation act) {
  const BiasStart s(bias, cols_lo, cols_hi);
  const __mmask16 words = lane_mask((__builtin_popcount(cols_lo) + __builtin_popcount(cols_hi) + 1) / 2);
  const __m512i stride = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(static_cast<int>(MR)));
  detail::Bf16Sums acc0, acc1;
#pragma GCC unroll 14
  for (int m = 0; m < MR; ++m) acc0[m] = s.lo, acc1[m] = s.hi;
  micro_kernel(a, b, pairs, acc0, acc1);
  for (int64_t m = 0; m < MR; ++m) {
    __m512i w = _mm512_setzero_si512();
    if (m < rows) {
      const __m512 lo = _mm512_maskz_mov_ps(cols_lo, activate(act, acc0[m]));
      const __m512 hi = _mm512_maskz_mov_ps(cols_hi, activate(act, acc1[m]));
      w = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
    }
    _mm512_mask_i32scatter_epi32(dst + m, words, stride, w, 4);
  }
}

}  // namespace

void Bf16Activations::reset(int64_t n, int64_t in) { shape(n, in); }

void Bf16Activations::shape(int64_t n, int64_t in) {
  n_ = n;
  in_ = in;
  pairs_ = (in + 1) / 2;
  panels_ = (n + MR - 1) / MR;
  data_.resize(static_cast<size_t>(panels_ * MR * pairs_));  // every word is written by pack_panel
}

// Panel i from rows i * MR.. of x (rows ld apart); its rows past n_ are zero. The rows are rounded
// first, then transposed into place.
void Bf16Activations::pack_panel(const float* x, int64_t ld, int64_t i) {
  thread_local std::vector<uint32_t> rows;
  rows.resize(static_cast<size_t>(MR * pairs_));
  const int64_t live = std::min(MR, n_ - i * MR);
  const uint32_t* src[MR];
  for (int64_t m = 0; m < live; ++m) {
    round_to_pairs(x + (i * MR + m) * ld, in_, rows.data() + m * pairs_);
    src[m] = rows.data() + m * pairs_;
  }
  write_panel(src, live, pairs_, MR, data_.data() + i * pairs_ * MR);
}

void Bf16Activations::pack_panel(const RowSource& source, int64_t i) {
  thread_local std::vector<uint32_t> rows;
  thread_local std::vector<float> scratch;
  rows.resize(static_cast<size_t>(MR * pairs_));
  scratch.resize(static_cast<size_t>(in_));
  const int64_t live = std::min(MR, n_ - i * MR);
  const uint32_t* src[MR];
  for (int64_t m = 0; m < live; ++m) {
    uint32_t* words = rows.data() + m * pairs_;
    if (const float* row = source(i * MR + m, scratch.data())) round_to_pairs(row, in_, words);
    else std::fill(words, words + pairs_, 0u);
    src[m] = words;
  }
  write_panel(src, live, pairs_, MR, data_.data() + i * pairs_ * MR);
}

Bf16Activations::Bf16Activations(int64_t n, int64_t in, const RowSource& rows, ThreadPool& pool) {
  shape(n, in);
  pool.parallel_for(panels_, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pack_panel(rows, i);
  });
}

Bf16Activations::Bf16Activations(const float* x, int64_t n, int64_t in, ThreadPool& pool) {
  shape(n, in);
  pool.parallel_for(panels_, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pack_panel(x, in, i);
  });
}

void Bf16Activations::assign(const float* x, int64_t n, int64_t in, int64_t ld) {
  shape(n, in);
  for (int64_t i = 0; i < panels_; ++i) {
    // Rows ld apart (an attention head's K inside the qkv map) defeat the hardware prefetcher: the
    // next panel's rows are fetched while this one is packed.
    if (ld != in)
      for (int64_t r = (i + 1) * MR; r < std::min(n_, (i + 2) * MR); ++r)
        for (int64_t k = 0; k < in; k += 16) _mm_prefetch(reinterpret_cast<const char*>(x + r * ld + k), _MM_HINT_T0);
    pack_panel(x, ld, i);
  }
}

namespace {

// Row r of a bf16 matrix as pair words: read in place, or (odd width) copied into `pairs` with the
// last word's high half zero.
const uint32_t* bf16_row_pairs(const uint16_t* row, int64_t in, uint32_t* pairs) {
  if (in % 2 == 0) return reinterpret_cast<const uint32_t*>(row);  // read only by vector loads
  std::memcpy(pairs, row, static_cast<size_t>(in) * sizeof(uint16_t));
  reinterpret_cast<uint16_t*>(pairs)[in] = 0;
  return pairs;
}

}  // namespace

void Bf16Activations::assign(const uint16_t* x, int64_t n, int64_t in, int64_t ld) {
  shape(n, in);
  thread_local std::vector<uint32_t> rows;
  rows.resize(static_cast<size_t>(MR * pairs_));
  for (int64_t i = 0; i < panels_; ++i) {
    // Rows ld apart defeat the hardware prefetcher, as in the f32 assign.
    if (ld != in)
      for (int64_t r = (i + 1) * MR; r < std::min(n_, (i + 2) * MR); ++r)
        for (int64_t k = 0; k < in; k += 32) _mm_prefetch(reinterpret_cast<const char*>(x + r * ld + k), _MM_HINT_T0);
    const int64_t live = std::min(MR, n_ - i * MR);
    const uint32_t* src[MR];
    for (int64_t m = 0; m < live; ++m) src[m] = bf16_row_pairs(x + (i * MR + m) * ld, in, rows.data() + m * pairs_);
    write_panel(src, live, pairs_, MR, data_.data() + i * pairs_ * MR);
  }
}

namespace {

// The pair words (a[i], b[i]) of 16 elements of rows a and b (b null: zeros), lanes past m zero.
__m512i pair_words(const float* a, const float* b, __mmask16 m) {
  return detail::bf16_pair_words(_mm512_maskz_loadu_ps(m, a), b ? _mm512_maskz_loadu_ps(m, b) : _mm512_setzero_ps());
}
__m512i pair_words(const uint16_t* a, const uint16_t* b, __mmask16 m) {
  const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a));
  return b ? _mm512_or_si512(lo, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b)), 16)) : lo;
}

// assign_transposed's packing from f32 or bf16 rows into `panels` panels of `pairs` pairs. Pair p
// joins rows 2p and 2p + 1 of x (their element i is activation row i's); its n words go to the
// panels MR at a time. `words` is zero past n (only lanes below n are ever stored), so a panel's
// rows past n come out zero.
template <typename E>
void pack_transposed(const E* x, int64_t n, int64_t in, int64_t ld, int64_t pairs, int64_t panels, uint32_t* data) {
  constexpr int64_t kLine = 64 / sizeof(E);
  thread_local std::vector<uint32_t> words;
  words.assign(static_cast<size_t>(panels * MR + 16), 0u);
  const __mmask16 panel_rows = lane_mask(MR);
  for (int64_t p = 0; p < pairs; ++p) {
    const E* a = x + 2 * p * ld;
    const E* b = 2 * p + 1 < in ? a + ld : nullptr;
    // Both rows of the pair kPrefetchRows / 2 ahead: rows ld apart (an attention head's V inside
    // the qkv map) defeat the hardware prefetcher.
    for (int64_t r = 2 * p + kPrefetchRows; r < std::min(in, 2 * p + kPrefetchRows + 2); ++r)
      for (int64_t i = 0; i < n; i += kLine) _mm_prefetch(reinterpret_cast<const char*>(x + r * ld + i), _MM_HINT_T0);
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = lane_mask(n - i);
      _mm512_mask_storeu_epi32(words.data() + i, m, pair_words(a + i, b ? b + i : nullptr, m));
    }
    for (int64_t i = 0; i < panels; ++i)
      _mm512_mask_storeu_epi32(data + i * pairs * MR + p * MR, panel_rows, _mm512_loadu_si512(words.data() + i * MR));
  }
}

}  // namespace

void Bf16Activations::assign_transposed(const uint16_t* x, int64_t n, int64_t in, int64_t ld) {
  shape(n, in);
  pack_transposed(x, n, in, ld, pairs_, panels_, data_.data());
}

void Bf16Activations::assign_transposed(const float* x, int64_t n, int64_t in, int64_t ld) {
  shape(n, in);
  pack_transposed(x, n, in, ld, pairs_, panels_, data_.data());
}

namespace {

// Packs `rows` rows into panels of NR; row(r, floats, pairs) returns row r as ceil(in / 2) pair
// words (it may fill and return `pairs`, using `floats` as scratch). A panel's rows are converted
// first, then transposed into place; rows past `rows` are zero.
template <typename RowFn>
void pack_rows(int64_t rows, int64_t in, std::vector<uint32_t>& out, RowFn row) {
  const int64_t pairs = (in + 1) / 2, panels = (rows + NR - 1) / NR;
  out.resize(static_cast<size_t>(panels * NR * pairs));
  thread_local std::vector<float> floats;
  thread_local std::vector<uint32_t> words;
  floats.resize(static_cast<size_t>(in));
  words.assign(static_cast<size_t>(NR * pairs), 0u);
  const uint32_t* src[NR];
  for (int64_t j = 0; j < panels; ++j) {
    const int64_t live = std::min(NR, rows - j * NR);
    for (int64_t r = 0; r < live; ++r) src[r] = row(j * NR + r, floats.data(), words.data() + r * pairs);
    write_panel(src, live, pairs, NR, out.data() + j * NR * pairs);
  }
}

}  // namespace

void pack_bf16_weights(const TensorView& w, int64_t r0, int64_t rows, std::vector<uint32_t>& out) {
  const int64_t in = w.shape[1];
  const auto* base = static_cast<const uint8_t*>(w.data);
  if (dtype_is_interleaved(w.dtype)) {
    // Rows interleaved by 16 convert by whole groups (r0 and rows are: tiles are panels of 32 rows
    // and the matrix whole groups), then pack as floats.
    thread_local std::vector<float> floats;
    floats.resize(static_cast<size_t>(rows * in));
    detail::table_for(active_isa()).to_f32[static_cast<int>(w.dtype)](base + r0 * w.row_bytes(), w.row_bytes(), in, rows,
                                                                       floats.data());
    pack_bf16_weights(floats.data(), rows, in, in, 1, out);
    return;
  }
  // The kernels' own row conversion (vectorised for f16 and q8_0; the scalar one was a third of
  // an f16 prefill's time).
  const detail::RowsToF32Fn to_f32 = detail::table_for(active_isa()).to_f32[static_cast<int>(w.dtype)];
  pack_rows(rows, in, out, [&](int64_t r, float* floats, uint32_t* pairs) -> const uint32_t* {
    const uint8_t* src = base + (r0 + r) * w.row_bytes();
    // bf16 rows are already pairs (element 2p in the low half of word p, little-endian), read in
    // place; an odd last element is copied out to keep the zero high half `pairs` was cleared to.
    // Other formats, block-quantised ones included, go through f32 (a row's conversion is O(1) per
    // weight against the GEMM's O(n)).
    if (w.dtype == DType::BF16) {
      if (in % 2 == 0) return reinterpret_cast<const uint32_t*>(src);  // read only by vector loads
      std::memcpy(pairs, src, static_cast<size_t>(in) * sizeof(uint16_t));
      return pairs;
    }
    to_f32(src, w.row_bytes(), in, 1, floats);
    round_to_pairs(floats, in, pairs);
    return pairs;
  });
}

void pack_bf16_weights(const float* src, int64_t rows, int64_t in, int64_t row_stride, int64_t col_stride,
                       std::vector<uint32_t>& out) {
  pack_rows(rows, in, out, [&](int64_t r, float* floats, uint32_t* pairs) -> const uint32_t* {
    const float* s = src + r * row_stride;
    if (col_stride != 1) {
      for (int64_t k = 0; k < in; ++k) floats[k] = s[k * col_stride];
      s = floats;
    }
    round_to_pairs(s, in, pairs);
    return pairs;
  });
}

void pack_bf16_weights(const uint16_t* src, int64_t rows, int64_t in, int64_t row_stride, std::vector<uint32_t>& out) {
  pack_rows(rows, in, out, [&](int64_t r, float*, uint32_t* pairs) -> const uint32_t* {
    return bf16_row_pairs(src + r * row_stride, in, pairs);
  });
}

namespace {

// The AMX path's three outputs, from each block's f32 sums (detail::amx_blocks): stored, rounded
// to bf16, or activated and packed, as the AVX-512 path's block_to_* finish theirs.
void amx_gemm(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, float* y, int64_t ldy, const float* bias) {
  detail::amx_blocks(x, packed_w, rows, bias, [&](int64_t i0, int64_t j0, const float* sums, int64_t live_rows, int64_t live_cols) {
    for (int64_t r = 0; r < live_rows; ++r) std::copy_n(sums + r * detail::kAmxCols, live_cols, y + (i0 + r) * ldy + j0);
  });
}

void amx_gemm_to_bf16(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, uint16_t* y, int64_t ldy,
                      const float* bias) {
  detail::amx_blocks(x, packed_w, rows, bias, [&](int64_t i0, int64_t j0, const float* sums, int64_t live_rows, int64_t live_cols) {
    const __mmask32 cols = live_cols >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << live_cols) - 1);
    for (int64_t r = 0; r < live_rows; ++r) {
      const float* s = sums + r * detail::kAmxCols;
      const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + 16), _mm512_loadu_ps(s));
      _mm512_mask_storeu_epi16(y + (i0 + r) * ldy + j0, cols, reinterpret_cast<__m512i>(b));
    }
  });
}

void amx_gemm_to_activations(const Bf16Activations& x, const uint32_t* packed_w, int64_t r0, int64_t rows,
                             const float* bias, Activation act, Bf16Activations& y) {
  detail::amx_blocks(x, packed_w, rows, bias, [&](int64_t i0, int64_t j0, const float* sums, int64_t live_rows, int64_t live_cols) {
    const __mmask16 lo = lane_mask(live_cols), hi = lane_mask(live_cols - 16);
    const int64_t words = (live_cols + 1) / 2, first_pair = (r0 + j0) / 2;
    for (int64_t r = 0; r < live_rows; ++r) {
      const float* s = sums + r * detail::kAmxCols;
      const __m512 a = _mm512_maskz_mov_ps(lo, activate(act, _mm512_loadu_ps(s)));
      const __m512 b = _mm512_maskz_mov_ps(hi, activate(act, _mm512_loadu_ps(s + 16)));
      alignas(64) uint32_t w[16];
      _mm512_store_si512(w, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
      const int64_t row = i0 + r;
      uint32_t* dst = y.panel(row / MR) + first_pair * MR + row % MR;
      for (int64_t q = 0; q < words; ++q) dst[q * MR] = w[q];
    }
  });
}

}  // namespace

void bf16_gemm_to_bf16(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, uint16_t* y, int64_t ldy,
                       const float* bias) {
  if (bf16_amx_active()) {
    amx_gemm_to_bf16(x, packed_w, rows, y, ldy, bias);
    return;
  }
  const int64_t pairs = x.pairs(), panels = (rows + NR - 1) / NR;
  for (int64_t i = 0; i < x.panels(); ++i) {
    const int64_t r = std::min(MR, x.rows() - i * MR);
    for (int64_t j = 0; j < panels; ++j) {
      const int64_t c = rows - j * NR;
      block_to_bf16(x.panel(i), packed_w + j * NR * pairs, pairs, y + i * MR * ldy + j * NR, ldy, r, lane_mask(c),
                    lane_mask(c - 16), bias ? bias + j * NR : nullptr);
    }
  }
}

void bf16_gemm(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, float* y, int64_t ldy,
               const float* bias) {
  if (bf16_amx_active()) {
    amx_gemm(x, packed_w, rows, y, ldy, bias);
    return;
  }
  const int64_t pairs = x.pairs(), panels = (rows + NR - 1) / NR;
  // The input in even chunks of at most kBf16ChunkPairs pairs: an activation panel's chunk stays in
  // L1 while every weight panel's chunk passes over it; later chunks add to what the first stored.
  const int64_t chunks = std::max<int64_t>(1, (pairs + kBf16ChunkPairs - 1) / kBf16ChunkPairs);
  const int64_t chunk = (pairs + chunks - 1) / chunks;
  for (int64_t k0 = 0; k0 < pairs; k0 += chunk) {
    const int64_t kc = std::min(chunk, pairs - k0);
    for (int64_t i = 0; i < x.panels(); ++i) {
      const int64_t r = std::min(MR, x.rows() - i * MR);
      for (int64_t j = 0; j < panels; ++j) {
        const int64_t c = rows - j * NR;
        const uint32_t* a = x.panel(i) + k0 * MR;
        const uint32_t* b = packed_w + j * NR * pairs + k0 * NR;
        float* out = y + i * MR * ldy + j * NR;
        if (k0 == 0) block_to_f32<false>(a, b, kc, out, ldy, r, lane_mask(c), lane_mask(c - 16), bias ? bias + j * NR : nullptr);
        else block_to_f32<true>(a, b, kc, out, ldy, r, lane_mask(c), lane_mask(c - 16), nullptr);
      }
    }
  }
}

void bf16_gemm_to_activations(const Bf16Activations& x, const uint32_t* packed_w, int64_t r0, int64_t rows,
                              const float* bias, Activation act, Bf16Activations& y) {
  if (bf16_amx_active()) {
    amx_gemm_to_activations(x, packed_w, r0, rows, bias, act, y);
    return;
  }
  const int64_t pairs = x.pairs(), panels = (rows + NR - 1) / NR;
  for (int64_t i = 0; i < x.panels(); ++i) {
    const int64_t r = std::min(MR, x.rows() - i * MR);
    for (int64_t j = 0; j < panels; ++j) {
      const int64_t c = rows - j * NR;
      uint32_t* dst = y.panel(i) + (r0 + j * NR) / 2 * MR;
      block_to_activations(x.panel(i), packed_w + j * NR * pairs, pairs, dst, r, lane_mask(c), lane_mask(c - 16),
                           bias ? bias + j * NR : nullptr, act);
    }
  }
}

}  // namespace folio::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
