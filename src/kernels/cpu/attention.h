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

namespace folio::kernels {

// `tokens` rows of keys and values stored head-major: KV head h of row t starts at
// k + h * head_stride + t * head_bytes (V likewise), so one head's rows are contiguous and a
// query head streams them without striding over the other heads.
struct KVSpan {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t tokens = 0;
  size_t head_stride = 0;
};

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  DType kv_dtype = DType::F32;
  size_t head_bytes = 0;  // bytes of one head's K (or V) row: head_dim elements of kv_dtype
  float scale = 1.0f;    // usually 1/sqrt(head_dim)
};

// For heads [head_begin, head_end): out[h] = softmax(scale * q[h] . K^T) V over every span row.
// q and out are [n_heads, head_dim] f32. `scratch` holds at least the total span rows (floats).
void attend(const float* q, std::span<const KVSpan> spans, const AttentionShape& shape, float* out,
            int64_t head_begin, int64_t head_end, float* scratch);

}  // namespace folio::kernels
