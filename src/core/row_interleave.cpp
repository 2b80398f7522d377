#include "core/row_interleave.h"

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace folio {

namespace {

// A run of a block's bytes and the unit it is cut into across the 16 rows.
struct Field {
  size_t offset, bytes, unit;
};

constexpr Field kQ4kFields[] = {{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 128, 4}};
constexpr Field kQ6kFields[] = {{0, 128, 4}, {128, 64, 4}, {192, 16, 1}, {208, 2, 2}};
constexpr Field kQ8Fields[] = {{0, 2, 2}, {2, 32, 4}};
constexpr Field kQ5Fields[] = {{0, 2, 2}, {2, 4, 4}, {6, 16, 4}};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ5_0) == 22);
static_assert(offsetof(BlockQ4K, qs) == 16 && offsetof(BlockQ6K, d) == 208);

struct Layout {
  std::span<const Field> fields;
  size_t block_bytes;
};

Layout layout_of(DType row_format) {
  switch (row_format) {
    case DType::Q4_K: return {kQ4kFields, sizeof(BlockQ4K)};
    case DType::Q6_K: return {kQ6kFields, sizeof(BlockQ6K)};
    case DType::Q8_0: return {kQ8Fields, sizeof(BlockQ8_0)};
    case DType::Q5_0: return {kQ5Fields, sizeof(BlockQ5_0)};
    default: break;
  }
  throw_invalid(std::string("interleaved rows: ") + dtype_name(row_format) + " has no interleaved layout (q4_k, q6_k, q8_0, q5_0)");
}

// Calls move(column byte offset, row byte offset, bytes) for every unit of block column b: the same
// walk interleaves (row -> column) and deinterleaves (column -> row).
template <class Move>
void for_each_unit(const Layout& l, Move move) {
  size_t column = 0;
  for (const Field& f : l.fields) {
    for (size_t u = 0; u < f.bytes / f.unit; ++u)
      for (int64_t r = 0; r < kGroupRows; ++r)
        move(column + (u * kGroupRows + static_cast<size_t>(r)) * f.unit, static_cast<size_t>(r), f.offset + u * f.unit, f.unit);
    column += f.bytes * kGroupRows;
  }
}

// Blocks per row of `in` columns.
int64_t check_shape(DType row_format, int64_t rows, int64_t in) {
  layout_of(row_format);  // a format without the layout is the first error
  const std::string what = std::string("interleaved ") + dtype_name(row_format);
  const int64_t block = dtype_block_elems(row_format);
  FOLIO_CHECK_INPUT(rows >= 0 && rows % kGroupRows == 0, what + ": " + std::to_string(rows) + " rows is not a multiple of 16");
  FOLIO_CHECK_INPUT(in >= 0 && in % block == 0,
                    what + ": " + std::to_string(in) + " columns is not a multiple of " + std::to_string(block));
  return in / block;
}

}  // namespace

void interleave_group(DType row_format, const uint8_t* rows, size_t row_bytes, int64_t nb, uint8_t* group) {
  const Layout l = layout_of(row_format);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* col = group + static_cast<size_t>(b) * kGroupRows * l.block_bytes;
    const uint8_t* blocks = rows + static_cast<size_t>(b) * l.block_bytes;
    for_each_unit(l, [&](size_t c, size_t r, size_t o, size_t n) { std::memcpy(col + c, blocks + r * row_bytes + o, n); });
  }
}

void deinterleave_group(DType row_format, const uint8_t* group, int64_t nb, uint8_t* rows, size_t row_bytes) {
  const Layout l = layout_of(row_format);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + static_cast<size_t>(b) * kGroupRows * l.block_bytes;
    uint8_t* blocks = rows + static_cast<size_t>(b) * l.block_bytes;
    for_each_unit(l, [&](size_t c, size_t r, size_t o, size_t n) { std::memcpy(blocks + r * row_bytes + o, col + c, n); });
  }
}

void interleave_rows(DType row_format, const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst) {
  const int64_t nb = check_shape(row_format, rows, in);
  const size_t row_bytes = dtype_row_bytes(row_format, in), group_bytes = kGroupRows * row_bytes;
  std::vector<uint8_t> staged(group_bytes);  // a group's rows, so that dst may be src
  for (int64_t g = 0; g < rows / kGroupRows; ++g) {
    std::memcpy(staged.data(), src + static_cast<size_t>(g) * group_bytes, group_bytes);
    interleave_group(row_format, staged.data(), row_bytes, nb, dst + static_cast<size_t>(g) * group_bytes);
  }
}

void deinterleave_rows(DType row_format, const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst) {
  const int64_t nb = check_shape(row_format, rows, in);
  const size_t row_bytes = dtype_row_bytes(row_format, in), group_bytes = kGroupRows * row_bytes;
  for (int64_t g = 0; g < rows / kGroupRows; ++g)
    deinterleave_group(row_format, src + static_cast<size_t>(g) * group_bytes, nb, dst + static_cast<size_t>(g) * group_bytes,
                       row_bytes);
}

}  // namespace folio
