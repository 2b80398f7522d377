#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/matmul.h"

namespace folio::kernels {

void attend(const float* q, std::span<const KVSpan> spans, const AttentionShape& s, float* out,
            int64_t head_begin, int64_t head_end, float* scratch) {
  const int64_t group = s.n_heads / s.n_kv_heads;
  const size_t head_bytes = s.row_bytes / static_cast<size_t>(s.n_kv_heads);
  for (int64_t h = head_begin; h < head_end; ++h) {
    const float* qh = q + h * s.head_dim;
    float* oh = out + h * s.head_dim;
    const size_t kv_off = static_cast<size_t>(h / group) * head_bytes;
    // Pass 1: scores over all rows, and their maximum.
    float m = -INFINITY;
    int64_t idx = 0;
    for (const KVSpan& sp : spans) {
      const uint8_t* k = sp.k + kv_off;
      for (int64_t t = 0; t < sp.tokens; ++t) {
        float sc = dot(qh, k + static_cast<size_t>(t) * s.row_bytes, s.kv_dtype, s.head_dim) * s.scale;
        scratch[idx++] = sc;
        m = std::max(m, sc);
      }
    }
    // Pass 2: exponentiate, accumulate probabilities times values, normalise once at the end.
    std::memset(oh, 0, sizeof(float) * static_cast<size_t>(s.head_dim));
    double sum = 0.0;
    idx = 0;
    for (const KVSpan& sp : spans) {
      const uint8_t* v = sp.v + kv_off;
      for (int64_t t = 0; t < sp.tokens; ++t) {
        float p = std::exp(scratch[idx++] - m);
        sum += p;
        axpy(p, v + static_cast<size_t>(t) * s.row_bytes, s.kv_dtype, oh, s.head_dim);
      }
    }
    float inv = sum > 0 ? static_cast<float>(1.0 / sum) : 0.f;
    for (int64_t i = 0; i < s.head_dim; ++i) oh[i] *= inv;
  }
}

}  // namespace folio::kernels
