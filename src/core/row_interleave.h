// Block-quantised weights with their rows interleaved in groups of 16: the layout a decode product
// can read with one vector lane per row, so a block's scales and float factors are applied to 16
// rows by one instruction where the row-by-row kernel spends one on each row, and no block's sums
// need adding across lanes. That per-block work bounds the products wherever memory does not: in
// cache, and with several sequences per step (docs/benchmarks.md, issue 47's sections).
//
// The bytes are those of the rows, moved (the same count: 16 x the block's bytes per block column),
// so a matrix can be interleaved in place of its rows. Group g holds rows 16g .. 16g + 15 and starts
// where row 16g would; within it, block column b (16 blocks' bytes) holds the 16 rows' block b field
// by field, in the block's own field order, each field cut into units (a quad of 4 bytes for codes,
// one byte for packed scales, 2 for an f16) and unit u of row r at the field's start + (16 u + r) x
// the unit. So a 64-byte vector of a code field holds one quad of each of the 16 rows (a B tile's
// row for AMX, a lane per row for VNNI). Four formats have the layout:
//   q4_k (Q4_K_X16, 2304 bytes a column):  d 0 .. 31, dmin 32 .. 63, 12 scale planes 64 .. 255,
//     32 quads of qs 256 .. 2303 (quad u: each row's qs[4u .. 4u + 3])
//   q6_k (Q6_K_X16, 3360 bytes a column):  32 quads of ql 0 .. 2047, 16 quads of qh 2048 .. 3071,
//     16 scale planes 3072 .. 3327, d 3328 .. 3359
//   q8_0 (Q8_0_X16, 544 bytes a column):  d 0 .. 31, 8 quads of codes 32 .. 543
//   q5_0 (Q5_0_X16, 352 bytes a column):  d 0 .. 31, the 16 rows' qh words 32 .. 95, 4 quads of qs
//     96 .. 351
//
// A matrix in this layout has the interleaved DType (row_bytes as its row format's; rows in whole
// groups); the decode products over it (kernels/cpu/*_x16_*.h) give the bits of the row format's
// product of the same rows on every kernel table. Where it pays (kernels::interleave_pays()),
// loaders store such linears this way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "core/quant_blocks.h"

namespace folio {

inline constexpr int64_t kGroupRows = 16;
inline constexpr size_t kQ4kGroupBlockBytes = kGroupRows * sizeof(BlockQ4K);
inline constexpr size_t kQ6kGroupBlockBytes = kGroupRows * sizeof(BlockQ6K);
inline constexpr size_t kQ8GroupBlockBytes = kGroupRows * sizeof(BlockQ8_0);
inline constexpr size_t kQ5GroupBlockBytes = kGroupRows * sizeof(BlockQ5_0);

// The interleaved twin of a row format (Q4_K -> Q4_K_X16, Q6_K -> Q6_K_X16), if it has one.
constexpr std::optional<DType> interleaved_dtype(DType row_format) {
  switch (row_format) {
    case DType::Q4_K: return DType::Q4_K_X16;
    case DType::Q6_K: return DType::Q6_K_X16;
    case DType::Q8_0: return DType::Q8_0_X16;
    case DType::Q5_0: return DType::Q5_0_X16;
    default: return std::nullopt;
  }
}
// The row format an interleaved format moves (Q4_K_X16 -> Q4_K); t itself for any other.
constexpr DType row_dtype(DType t) {
  switch (t) {
    case DType::Q4_K_X16: return DType::Q4_K;
    case DType::Q6_K_X16: return DType::Q6_K;
    case DType::Q8_0_X16: return DType::Q8_0;
    case DType::Q5_0_X16: return DType::Q5_0;
    default: return t;
  }
}
// True for the interleaved formats.
constexpr bool dtype_is_interleaved(DType t) { return row_dtype(t) != t; }

// 16 rows of nb blocks of `row_format` (one with a twin; row r at rows + r * row_bytes) into one
// group (16 x nb blocks' bytes at `group`; must not overlap the rows).
void interleave_group(DType row_format, const uint8_t* rows, size_t row_bytes, int64_t nb, uint8_t* group);

// The inverse: a group back into 16 rows.
void deinterleave_group(DType row_format, const uint8_t* group, int64_t nb, uint8_t* rows, size_t row_bytes);

// A matrix of `rows` rows (a multiple of 16) and `in` columns (a multiple of the block) of `row_format`,
// row-major at src, interleaved into dst (the same number of bytes; dst == src interleaves in
// place). Throws InvalidInput if rows or in are not such multiples or the format has no twin.
void interleave_rows(DType row_format, const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst);

// The inverse, group by group: `rows` rows (a multiple of 16) back into rows of `row_format` at
// dst (which must not overlap src).
void deinterleave_rows(DType row_format, const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst);

}  // namespace folio
