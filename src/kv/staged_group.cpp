#include "kv/staged_group.h"

#include <vector>

#include "kv/block_rows.h"

namespace folio {

void quantize_staged_rows(const KVLayout& lay, const KVBlock& s, int64_t rows, const KVBlock& d) {
  // The staging block holds keys in f16 (or another float type): reading them is exact, so the
  // group is quantised from exactly what was staged.
  const auto n = static_cast<size_t>(lay.n_kv_heads * rows * lay.head_dim);
  thread_local std::vector<float> k, v;
  if (k.size() < n) {
    k.resize(n);
    v.resize(n);
  }
  read_block_rows(lay, s, rows, k.data(), v.data());
  write_block_rows(lay, k.data(), v.data(), rows, d);
  // Quantised values were stored in their final form as they came (per token): move them as they
  // are, since quantising dequantised codes again need not give the same codes.
  if (s.v_type == d.v_type) copy_value_rows(lay, s, rows, d);
}

}  // namespace folio
