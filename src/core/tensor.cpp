#include "core/tensor.h"

#include "core/row_interleave.h"
#include "core/thread_pool.h"

namespace folio {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

// An interleaved tensor's rows back in their row format (every 2-D slice is whole groups).
std::vector<uint8_t> rows_of(const TensorView& t) {
  const int64_t cols = t.cols(), rows = cols > 0 ? t.numel() / cols : 0;
  std::vector<uint8_t> bytes(t.nbytes());
  deinterleave_rows(row_dtype(t.dtype), static_cast<const uint8_t*>(t.data), rows, cols, bytes.data());
  return bytes;
}

}  // namespace

std::vector<float> to_f32_vector(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (dtype_is_interleaved(t.dtype)) convert_to_f32(row_dtype(t.dtype), rows_of(t).data(), v.data(), t.numel());
  else convert_to_f32(t.dtype, t.data, v.data(), t.numel());
  return v;
}

void convert_tensor(const TensorView& t, DType target, void* dst, ThreadPool* pool) {
  if (dtype_is_interleaved(t.dtype)) {
    const std::vector<uint8_t> rows = rows_of(t);
    TensorView plain = t;
    plain.dtype = row_dtype(t.dtype);
    plain.data = rows.data();
    convert_tensor(plain, target, dst, pool);
    return;
  }
  const int64_t cols = t.cols(), rows = cols > 0 ? t.numel() / cols : 0;
  const size_t out_rb = dtype_row_bytes(target, cols);
  auto convert_rows = [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = begin; r < end; ++r) {
      convert_to_f32(t.dtype, t.row_ptr(r), row.data(), cols);
      convert_from_f32(target, row.data(), static_cast<uint8_t*>(dst) + static_cast<size_t>(r) * out_rb, cols);
    }
  };
  if (pool) pool->parallel_for(rows, convert_rows);
  else convert_rows(0, rows);
}

}  // namespace folio
