#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

namespace {

// The first rows of one head in the span after the current one, asked for as the current span
// starts: spans are short (a KV block holds 16 rows per head) and scattered, so without this every
// span would begin with a cache miss the hardware prefetcher cannot foresee.
constexpr int64_t kNextSpanPrefetchRows = 16;

void prefetch_span_rows(const uint8_t* head_rows, size_t row_bytes, int64_t tokens) {
  const size_t bytes = row_bytes * static_cast<size_t>(std::min(tokens, kNextSpanPrefetchRows));
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(head_rows + o);
}

// Calls fn(span, query head, KV head, rows before the span) with spans outer and heads inner: a
// span's rows of consecutive heads lie next to each other, so a KV block is read front to back
// instead of once per head. The keys (or values) of the next span are prefetched head by head.
template <class Fn>
void for_spans_then_heads(std::span<const KVSpan> spans, int64_t head_begin, int64_t head_end, int64_t group, int64_t hd,
                          bool values, Fn&& fn) {
  int64_t rows = 0;
  for (size_t si = 0; si < spans.size(); ++si) {
    const KVSpan* next = si + 1 < spans.size() ? &spans[si + 1] : nullptr;
    for (int64_t h = head_begin; h < head_end; ++h) {
      const int64_t kv_head = h / group;
      if (next) {
        const uint8_t* base = values ? next->v + static_cast<size_t>(kv_head) * next->v_head_stride
                                     : next->k + static_cast<size_t>(kv_head) * next->k_head_stride;
        prefetch_span_rows(base, kv_row_bytes(values ? next->v_type : next->k_type, hd), next->tokens);
      }
      fn(spans[si], h, kv_head, rows);
    }
    rows += spans[si].tokens;
  }
}

}  // namespace

void attend(const float* q, std::span<const KVSpan> spans, const AttentionShape& s, float* out,
            int64_t head_begin, int64_t head_end, float* scratch) {
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t group = s.n_heads / s.n_kv_heads, hd = s.head_dim, heads = head_end - head_begin;
  int64_t total = 0;
  for (const KVSpan& sp : spans) total += sp.tokens;
  // Scratch: each head's scores (total rows), then each head's 1/sum, then the scaled query of
  // quantised keys.
  auto scores = [&](int64_t h) { return scratch + (h - head_begin) * total; };
  float* inv_sum = scratch + heads * total;
  float* qs = inv_sum + heads;
  // Pass 1: scaled scores over every row of every span. Every head sums its rows in the same
  // order whatever the head range, so its result does not depend on the range.
  for_spans_then_heads(spans, head_begin, head_end, group, hd, false, [&](const KVSpan& sp, int64_t h, int64_t kv_head, int64_t rows) {
    const size_t rb = kv_row_bytes(sp.k_type, hd);
    const uint8_t* kh = sp.k + static_cast<size_t>(kv_head) * sp.k_head_stride;
    if (kv_quantized(sp.k_type)) {
      const uint16_t* params = sp.k_params + kv_head * kv_params_per_group(sp.k_type) * hd;
      dot_key_rows(sp.k_type, q + h * hd, kh, rb, params, sp.tokens, hd, s.scale, qs, scores(h) + rows);
    } else {
      table.dot_rows[static_cast<int>(kv_float_dtype(sp.k_type))](q + h * hd, kh, rb, sp.tokens, hd, s.scale, scores(h) + rows);
    }
  });
  // Softmax numerators in place; normalised once at the end.
  for (int64_t h = head_begin; h < head_end; ++h) {
    float* sc = scores(h);
    float m = -INFINITY;
    for (int64_t i = 0; i < total; ++i) m = std::max(m, sc[i]);
    const double sum = table.exp_sum(sc, total, m);
    inv_sum[h - head_begin] = sum > 0 ? static_cast<float>(1.0 / sum) : 0.f;
    std::memset(out + h * hd, 0, sizeof(float) * static_cast<size_t>(hd));
  }
  // Pass 2: probability-weighted sum of the value rows.
  for_spans_then_heads(spans, head_begin, head_end, group, hd, true, [&](const KVSpan& sp, int64_t h, int64_t kv_head, int64_t rows) {
    const size_t rb = kv_row_bytes(sp.v_type, hd);
    const uint8_t* vh = sp.v + static_cast<size_t>(kv_head) * sp.v_head_stride;
    if (kv_quantized(sp.v_type)) {
      axpy_value_rows(sp.v_type, scores(h) + rows, vh, rb, sp.v_params, sp.v_param_stride, kv_head * hd / sp.v_group, sp.v_group,
                      sp.tokens, hd, out + h * hd);
    } else {
      table.axpy_rows[static_cast<int>(kv_float_dtype(sp.v_type))](scores(h) + rows, vh, rb, sp.tokens, hd, out + h * hd);
    }
  });
  for (int64_t h = head_begin; h < head_end; ++h)
    for (int64_t i = 0; i < hd; ++i) out[h * hd + i] *= inv_sum[h - head_begin];
}

}  // namespace folio::kernels
