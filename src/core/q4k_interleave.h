// q4_k weights with their rows interleaved in groups of 16: the layout a decode product can read
// with one vector lane per row, so a block's scales, minima and float factors are applied to 16
// rows by one instruction where the row-by-row kernel spends one on each row. That per-block work
// bounds q4_k's products wherever memory does not: in cache, and with several sequences per step
// (docs/benchmarks.md, issue 47's section, has the figures).
//
// The bytes are those of the q4_k rows, moved (the same count: 16 x 144 per block column), so a
// matrix can be interleaved in place of its rows. Group g holds rows 16g .. 16g + 15 and starts
// where row 16g would; within it, block column b (kQ4kGroupBlockBytes) holds the 16 rows' block b:
//   bytes    0 ..   31  d of rows 0..15 (f16)
//   bytes   32 ..   63  dmin of rows 0..15 (f16)
//   bytes   64 ..  255  12 planes of 16 bytes: byte p of each row's 12 packed scale bytes
//   bytes  256 .. 2303  32 quads of 64 bytes: quad 8i + k holds each row's qs[32i + 4k .. 32i + 4k + 3]
//                       at 4r .. 4r + 3 (codes of elements 4k .. 4k + 3 of sub-blocks 2i (low
//                       nibbles) and 2i + 1 (high nibbles))
//
// A matrix in this layout has DType::Q4_K_X16 (row_bytes as q4_k's; rows in whole groups); the
// decode product over it (kernels/cpu/q4k_x16_vnni.h) gives the bits of the q4_k product of the
// same rows on every kernel table. Where it pays (kernels::q4k_interleave_pays()), loaders store q4_k
// linears this way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant_blocks.h"

namespace folio {

inline constexpr int64_t kQ4kGroupRows = 16;
inline constexpr size_t kQ4kGroupBlockBytes = kQ4kGroupRows * sizeof(BlockQ4K);

// 16 q4_k rows of nb blocks (row r at rows + r * row_bytes) into one group (nb * kQ4kGroupBlockBytes
// bytes at `group`; must not overlap the rows).
void interleave_q4k_group(const uint8_t* rows, size_t row_bytes, int64_t nb, uint8_t* group);

// The inverse: a group back into 16 q4_k rows.
void deinterleave_q4k_group(const uint8_t* group, int64_t nb, uint8_t* rows, size_t row_bytes);

// A q4_k matrix of `rows` rows (a multiple of 16) and `in` columns (a multiple of 256), row-major at
// src, interleaved into dst (the same number of bytes; dst == src interleaves in place). Throws
// InvalidInput if rows or in are not such multiples.
void interleave_q4k(const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst);

// The inverse, group by group: `rows` rows (a multiple of 16) back into q4_k rows at dst (which
// must not overlap src).
void deinterleave_q4k(const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst);

}  // namespace folio
