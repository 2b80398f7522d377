// One attention kernel for every KV policy.
//
// A query attends over a list of KV spans: pinned reference blocks, selected blocks, a window ring.
// Policies decide which spans exist; this kernel never knows which policy produced them. Softmax is
// over the union of all span rows, so the order of spans (and of rows inside a ring) is irrelevant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "kernels/cpu/kv_quant.h"

namespace folio::kernels {

// `tokens` rows of keys and values stored head-major: KV head h of row t starts at
// k + h * k_head_stride + t * kv_row_bytes(k_type, head_dim) (V likewise), so one head's rows are
// contiguous and a query head streams them without striding over the other heads. Each span has
// its own storage types, so reference blocks, quantised groups and an f16 window can be mixed.
struct KVSpan {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t tokens = 0;
  size_t k_head_stride = 0;
  size_t v_head_stride = 0;
  KVDType k_type = KVDType::F32;
  KVDType v_type = KVDType::F32;
  // Quantised keys: per KV head h, params at k_params + h * nparams * head_dim (see kv_quant.h);
  // the same for every row of the span (one key group). Keys quantised per token (the window,
  // k_param_stride > 0) keep them as values do: row t's at k_params + t * k_param_stride, channel
  // segment g at + g * nparams; head h uses segments from h * head_dim / k_group.
  const uint16_t* k_params = nullptr;
  size_t k_param_stride = 0;
  int64_t k_group = 0;
  // Quantised values: row t's params at v_params + t * v_param_stride, channel group g at
  // + g * nparams; head h uses groups from h * head_dim / v_group.
  const uint16_t* v_params = nullptr;
  size_t v_param_stride = 0;
  int64_t v_group = 0;
};

// Where KV head `kv_head`'s rows of a span start, in its keys or its values.
inline const uint8_t* head_rows(const KVSpan& s, size_t kv_head, bool values) {
  return values ? s.v + kv_head * s.v_head_stride : s.k + kv_head * s.k_head_stride;
}

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// A pass (the keys or the values of one call) that reads at least this many bytes streams its rows
// with a software prefetch running ahead and hands them to the row kernels in pieces; smaller ones,
// mostly in cache, go span by span (attention.cpp says why). Results are the same bits either way.
inline constexpr size_t kAttendStreamMinBytes = size_t{1} << 20;

// Floats of scratch attend() needs for `heads` heads over `rows` span rows in all.
inline size_t attend_scratch_floats(int64_t rows, int64_t heads, int64_t head_dim) {
  return static_cast<size_t>(heads * (rows + 1) + head_dim);
}

// For heads [head_begin, head_end): out[h] = softmax(scale * q[h] . K^T) V over every span row.
// q and out are [n_heads, head_dim] f32; `scratch` holds attend_scratch_floats(rows, heads, head_dim).
// Each head's result is the same whatever head range it is computed in.
void attend(const float* q, std::span<const KVSpan> spans, const AttentionShape& shape, float* out,
            int64_t head_begin, int64_t head_end, float* scratch);

}  // namespace folio::kernels
