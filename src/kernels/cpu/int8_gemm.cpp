#include "kernels/cpu/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

namespace {
// Rows per call of the ISA's sums: their u8 rows (<= 64 x a few KB) and int32 sums stay in L2
// while every panel passes over them.
constexpr int64_t kRowBlock = 64;
}  // namespace

Int8Weights Int8Weights::quantize(const float* w, int64_t out, int64_t in) {
  FOLIO_CHECK_INPUT(out >= 1 && in >= 4 && in % 4 == 0,
                    "int8 weights: need [out >= 1, in a positive multiple of 4], got [" + std::to_string(out) + ", " +
                        std::to_string(in) + "]");
  Int8Weights q;
  q.out = out, q.in = in;
  q.scales.assign(static_cast<size_t>(out), 0.0f);
  q.panels.assign(static_cast<size_t>(q.panel_count() * 16 * in), 0);
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    float m = 0.0f;
    for (int64_t k = 0; k < in; ++k) m = std::max(m, std::fabs(row[k]));
    if (m == 0.0f) continue;
    const float scale = m / 127.0f;
    q.scales[static_cast<size_t>(o)] = scale;
    int8_t* panel = q.panels.data() + (o / 16) * 16 * in;
    for (int64_t k = 0; k < in; ++k) {
      const long code = std::clamp(std::lround(row[k] / scale), -127L, 127L);
      panel[(k / 4) * 64 + (o % 16) * 4 + k % 4] = static_cast<int8_t>(code);
    }
  }
  return q;
}

float quantize_u7(const float* x, int64_t n, uint8_t* q) {
  // The largest value through the bit patterns: non-negative floats order as their int32 patterns
  // do, negative ones come out negative (and an integer max has no NaN or signed-zero cases).
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int32_t bits = table.max_bits(x, n);
  float m;
  std::memcpy(&m, &bits, 4);
  if (!(m > 0.0f) || !std::isfinite(m)) {
    std::fill_n(q, n, uint8_t{0});
    return 1.0f;
  }
  // Rounds half up (the values are >= 0, so truncating v + 0.5 does).
  table.quantize_u7(x, n, 127.0f / m, q);
  return m / 127.0f;
}

void gemm_int8_taps(const uint8_t* a, int64_t n, int64_t lda, std::span<const int64_t> tap_offsets, float a_scale,
                    const Int8Weights& w, const float* bias, float* y) {
  const auto taps = static_cast<int64_t>(tap_offsets.size());
  FOLIO_CHECK_INPUT(n >= 0 && taps >= 1 && w.in % taps == 0 && (w.in / taps) % 4 == 0,
                    "gemm_int8: " + std::to_string(taps) + " taps cannot split " + std::to_string(w.in) +
                        " inputs into runs of a multiple of 4 (or the row count is negative)");
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t ldc = w.panel_count() * 16;
  std::vector<float> scale(static_cast<size_t>(w.out));
  for (int64_t o = 0; o < w.out; ++o) scale[static_cast<size_t>(o)] = a_scale * w.scales[static_cast<size_t>(o)];
  std::vector<int32_t> sums(static_cast<size_t>(std::min(n, kRowBlock) * ldc));
  for (int64_t r0 = 0; r0 < n; r0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, n - r0);
    table.gemm_int8_sums(a + r0 * lda, rows, lda, tap_offsets.data(), taps, w.in / taps, w.panels.data(), w.panel_count(),
                         sums.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* s = sums.data() + r * ldc;
      float* out = y + (r0 + r) * w.out;
      for (int64_t o = 0; o < w.out; ++o)
        out[o] = static_cast<float>(s[o]) * scale[static_cast<size_t>(o)] + (bias ? bias[o] : 0.0f);
    }
  }
}

void gemm_int8(const uint8_t* a, int64_t n, float a_scale, const Int8Weights& w, const float* bias, float* y) {
  const int64_t at_start[] = {0};
  gemm_int8_taps(a, n, w.in, at_start, a_scale, w, bias, y);
}

}  // namespace folio::kernels
