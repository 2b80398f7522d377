// KVLayout: the shape of one token's keys and values in one layer, and how they are stored.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace folio {

struct KVLayout {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::F32;  // f32, f16 or bf16 (quantised formats arrive with their own spans)

  int64_t row_elems() const { return n_kv_heads * head_dim; }
  // Bytes of one head's K (or V) row.
  size_t head_bytes() const { return dtype_row_bytes(dtype, head_dim); }
  // Bytes of K (or V) for one token in one layer.
  size_t row_bytes() const { return dtype_row_bytes(dtype, row_elems()); }
  // Bytes of K and V for one token across all layers: what a cached token costs.
  size_t bytes_per_token() const { return 2 * row_bytes() * static_cast<size_t>(n_layers); }
};

}  // namespace folio
