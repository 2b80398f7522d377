// TensorView: a typed, shaped, non-owning view of tensor bytes (usually inside an mmap'ed checkpoint).
//
// Shapes are row-major in PyTorch order: a linear weight is [out_features, in_features], each row
// contiguous. GGUF's reversed dimension order is undone by its reader, so every loader hands out
// the same convention.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace folio {

class ThreadPool;

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.empty() ? 1 : (shape.size() == 1 ? 1 : shape[0]); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  size_t row_bytes() const { return dtype_row_bytes(dtype, cols()); }
  size_t nbytes() const { return static_cast<size_t>(numel() / dtype_block_elems(dtype)) * dtype_block_bytes(dtype); }
  // Row r's bytes; for an interleaved format (rows by 16) only where row r's group starts (r % 16 == 0).
  const uint8_t* row_ptr(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

// "[1280, 6848]"
std::string shape_to_string(const std::vector<int64_t>& shape);

// All elements of t converted to f32 (a copy).
std::vector<float> to_f32_vector(const TensorView& t);

// t's elements converted to `target` into dst (dtype_row_bytes(target, cols) per row of the innermost
// dimension), one row at a time through f32. Precondition: a block target's blocks divide the rows.
// With a pool, rows are split across its threads (the bytes do not depend on the split: each row is
// converted on its own); quantising to a K format is slow enough to need it (the full-size
// Unlimited-OCR decoder to q4_k_m: minutes on one core).
void convert_tensor(const TensorView& t, DType target, void* dst, ThreadPool* pool = nullptr);

}  // namespace folio
