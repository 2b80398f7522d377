#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

void attend(const float* q, std::span<const KVSpan> spans, const AttentionShape& s, float* out,
            int64_t head_begin, int64_t head_end, float* scratch) {
  if (s.kv_dtype == DType::Q8_0) throw_invalid("attention: q8_0 KV spans are not supported");
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int t = static_cast<int>(s.kv_dtype);  // F32, F16, BF16 index the row kernels
  const int64_t group = s.n_heads / s.n_kv_heads;
  for (int64_t h = head_begin; h < head_end; ++h) {
    const float* qh = q + h * s.head_dim;
    float* oh = out + h * s.head_dim;
    const size_t kv_head = static_cast<size_t>(h / group);
    // Pass 1: scaled scores over every row of every span.
    int64_t rows = 0;
    for (const KVSpan& sp : spans) {
      table.dot_rows[t](qh, sp.k + kv_head * sp.head_stride, s.head_bytes, sp.tokens, s.head_dim, s.scale, scratch + rows);
      rows += sp.tokens;
    }
    // Softmax numerators in place; normalised once at the end.
    float m = -INFINITY;
    for (int64_t i = 0; i < rows; ++i) m = std::max(m, scratch[i]);
    const double sum = table.exp_sum(scratch, rows, m);
    // Pass 2: probability-weighted sum of the value rows.
    std::memset(oh, 0, sizeof(float) * static_cast<size_t>(s.head_dim));
    rows = 0;
    for (const KVSpan& sp : spans) {
      table.axpy_rows[t](scratch + rows, sp.v + kv_head * sp.head_stride, s.head_bytes, sp.tokens, s.head_dim, oh);
      rows += sp.tokens;
    }
    const float inv = sum > 0 ? static_cast<float>(1.0 / sum) : 0.f;
    for (int64_t i = 0; i < s.head_dim; ++i) oh[i] *= inv;
  }
}

}  // namespace folio::kernels
