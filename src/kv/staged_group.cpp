#include "kv/staged_group.h"

#include <vector>

#include "core/error.h"
#include "kv/block_rows.h"

namespace folio {

void quantize_staged_rows(const KVLayout& lay, const KVBlock& s, int64_t rows, const KVBlock& d) {
  if (s.v_type != d.v_type) throw Error(Error::Kind::Internal, "a staging block's values must be stored as its group's");
  // The staging block holds keys as q8 per token (or in a float type): the group is quantised per
  // channel from what was staged.
  thread_local std::vector<float> k;
  k.resize(static_cast<size_t>(lay.n_kv_heads * rows * lay.head_dim));
  read_key_rows(lay, s, rows, k.data());
  write_key_rows(lay, k.data(), rows, d);
  // Values were stored in their final form as they came (per token): moved as they are, since
  // quantising dequantised codes again need not give the same codes.
  copy_value_rows(lay, s, rows, d);
}

}  // namespace folio
