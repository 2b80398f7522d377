#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

namespace {

// A thread's reads in one pass form a stream of short runs: for each span, the rows of each of its
// heads (a 16-row bf16 block holds 4 KiB per head), scattered over the pool. The hardware
// prefetcher does not follow the stream from one run to the next, and prefetching a whole run at
// once (the earlier scheme) issues bursts that stall on the miss buffers. StreamPrefetch instead
// keeps software prefetches a fixed distance ahead in that stream and advances as rows are consumed
// (docs/measurements.md, "Attention's streaming prefetch"). The distance covers the memory latency
// at the rate two cores now read: 3 KiB, set when the pass read ~20 GB/s, left a 4K-token
// reference's attention a fifth slower than 16 KiB does. The lines are asked into L2, not L1, as the
// weights' are (kernels/cpu/quant_dot_impl.h): a prefetch into L1 holds one of the core's few fill
// buffers until its line arrives from memory, and the pass stalled on them (a 4K reference's
// attention read 19-21 GB/s so on an Intel Xeon, 24 into L2; docs/measurements.md).
constexpr size_t kPrefetchAheadBytes = 16384;
// Float rows go to the row kernels in pieces of this many bytes per head (at least kChunkRows rows),
// so the prefetch advances smoothly: 8 rows of a 128-wide bf16 head, 32 of a 32-wide one (smaller
// pieces cost more in calls than they gain, whole 4 KiB runs advance the prefetch in bursts).
// Quantised spans go whole: their kernels prepare the query once per call.
constexpr size_t kChunkBytes = 2048;
constexpr int64_t kChunkRows = 4;
// Below kAttendStreamMinBytes read by one thread in one pass (a small model, a short context: the rows
// are mostly in L2/L3) the per-piece calls cost more than the stream saves, so spans go whole and
// each next span's first rows of a head are prefetched as that head starts (kNextSpanPrefetchRows).
// folio-mini-ocr (head_dim 32) read 10 pages at 2.0 pages/s with the pieces against 3.7 without; the
// full-size decoder's passes read 5 MiB per thread.
constexpr int64_t kNextSpanPrefetchRows = 16;

void prefetch_span_rows(const uint8_t* head_rows, size_t row_bytes, int64_t tokens) {
  const size_t bytes = row_bytes * static_cast<size_t>(std::min(tokens, kNextSpanPrefetchRows));
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(head_rows + o);
}

class StreamPrefetch {
 public:
  StreamPrefetch(std::span<const KVSpan> spans, int64_t head_begin, int64_t head_end, int64_t group, int64_t hd, bool values)
      : spans_(spans), hb_(head_begin), he_(head_end), group_(group), hd_(hd), values_(values), h_(head_begin) {
    enter();
    advance(kPrefetchAheadBytes);
  }

  // Prefetches the next `bytes` of the stream past what was already asked for.
  void advance(size_t bytes) {
    while (bytes > 0 && si_ < spans_.size()) {
      const size_t take = std::min(bytes, run_ - off_);
      // Line by line from the first line not yet asked for.
      for (size_t o = (off_ + 63) & ~size_t{63}; o < off_ + take; o += 64) __builtin_prefetch(base_ + o, 0, 2);
      off_ += take;
      bytes -= take;
      if (off_ >= run_) {
        off_ = 0;
        if (++h_ == he_) h_ = hb_, ++si_;
        enter();
      }
    }
  }

 private:
  // Where the run of (span si_, head h_) starts and how long it is.
  void enter() {
    if (si_ >= spans_.size()) return;
    const KVSpan& s = spans_[si_];
    run_ = kv_row_bytes(values_ ? s.v_type : s.k_type, hd_) * static_cast<size_t>(s.tokens);
    base_ = head_rows(s, static_cast<size_t>(h_ / group_), values_);
  }

  std::span<const KVSpan> spans_;
  int64_t hb_, he_, group_, hd_;
  bool values_;
  size_t si_ = 0;
  int64_t h_;
  size_t off_ = 0, run_ = 0;
  const uint8_t* base_ = nullptr;
};

// Rows [r, r + n) of a span as a span of their own (same storage; per-row parameters move with
// them, keys' per-span parameters do not).
KVSpan sub_span(const KVSpan& s, int64_t r, int64_t n, int64_t hd) {
  KVSpan sub = s;
  sub.k = s.k + static_cast<size_t>(r) * kv_row_bytes(s.k_type, hd);
  sub.v = s.v + static_cast<size_t>(r) * kv_row_bytes(s.v_type, hd);
  if (s.v_params) sub.v_params = s.v_params + static_cast<size_t>(r) * s.v_param_stride;
  if (s.k_params && s.k_param_stride) sub.k_params = s.k_params + static_cast<size_t>(r) * s.k_param_stride;
  sub.tokens = n;
  return sub;
}

// Calls fn(rows, query head, KV head, rows before them) with spans outer and heads inner: a span's
// rows of consecutive heads lie next to each other, so a KV block is read front to back instead of
// once per head. A pass of at least kAttendStreamMinBytes hands float rows out in pieces (kChunkBytes
// per head, at least kChunkRows rows) and prefetches the stream ahead as each piece goes; a smaller
// one hands out whole spans and prefetches the next span's first rows of each head. The row kernels
// sum every row (scores) and every output channel (values) in row order, so the pieces do not
// change any result.
template <class Fn>
void for_spans_then_heads(std::span<const KVSpan> spans, int64_t head_begin, int64_t head_end, int64_t group, int64_t hd,
                          bool values, Fn&& fn) {
  // Bytes this pass reads: each KV head of the range once per span (query heads sharing one reread it from cache).
  size_t pass_bytes = 0;
  const auto kv_heads = static_cast<size_t>((head_end - 1) / group - head_begin / group + 1);
  for (const KVSpan& s : spans) pass_bytes += kv_row_bytes(values ? s.v_type : s.k_type, hd) * static_cast<size_t>(s.tokens) * kv_heads;
  std::optional<StreamPrefetch> prefetch;
  if (pass_bytes >= kAttendStreamMinBytes) prefetch.emplace(spans, head_begin, head_end, group, hd, values);
  int64_t rows = 0;
  for (size_t si = 0; si < spans.size(); ++si) {
    const KVSpan& s = spans[si];
    const KVDType t = values ? s.v_type : s.k_type;
    const size_t rb = kv_row_bytes(t, hd);
    const int64_t chunk = kv_quantized(t) || !prefetch ? std::max<int64_t>(s.tokens, 1)
                                                       : std::max<int64_t>(kChunkRows, static_cast<int64_t>(kChunkBytes / std::max<size_t>(rb, 1)));
    const KVSpan* next = !prefetch && si + 1 < spans.size() ? &spans[si + 1] : nullptr;
    for (int64_t h = head_begin; h < head_end; ++h) {
      if (next)
        prefetch_span_rows(head_rows(*next, static_cast<size_t>(h / group), values), kv_row_bytes(values ? next->v_type : next->k_type, hd),
                           next->tokens);
      for (int64_t r = 0; r < s.tokens; r += chunk) {
        const int64_t n = std::min(chunk, s.tokens - r);
        fn(n == s.tokens ? s : sub_span(s, r, n, hd), h, h / group, rows + r);
        if (prefetch) prefetch->advance(static_cast<size_t>(n) * rb);
      }
    }
    rows += s.tokens;
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
    const uint8_t* kh = head_rows(sp, static_cast<size_t>(kv_head), false);
    if (kv_quantized(sp.k_type) && sp.k_param_stride) {
      dot_token_key_rows(sp.k_type, q + h * hd, kh, rb, sp.k_params, sp.k_param_stride, kv_head * hd / sp.k_group, sp.k_group,
                         sp.tokens, hd, s.scale, scores(h) + rows);
    } else if (kv_quantized(sp.k_type)) {
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
    const uint8_t* vh = head_rows(sp, static_cast<size_t>(kv_head), true);
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
