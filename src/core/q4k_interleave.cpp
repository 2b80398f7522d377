#include "core/q4k_interleave.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace folio {

namespace {

constexpr size_t kScalePlanes = 64, kQuads = 256;  // offsets inside a group's block column

const BlockQ4K& row_block(const uint8_t* rows, size_t row_bytes, int64_t r, int64_t b) {
  return reinterpret_cast<const BlockQ4K*>(rows + static_cast<size_t>(r) * row_bytes)[b];
}

BlockQ4K& row_block(uint8_t* rows, size_t row_bytes, int64_t r, int64_t b) {
  return reinterpret_cast<BlockQ4K*>(rows + static_cast<size_t>(r) * row_bytes)[b];
}

void check_shape(int64_t rows, int64_t in) {
  FOLIO_CHECK_INPUT(rows >= 0 && rows % kQ4kGroupRows == 0,
                    "interleaved q4_k: " + std::to_string(rows) + " rows is not a multiple of 16");
  FOLIO_CHECK_INPUT(in >= 0 && in % 256 == 0, "interleaved q4_k: " + std::to_string(in) + " columns is not a multiple of 256");
}

}  // namespace

void interleave_q4k_group(const uint8_t* rows, size_t row_bytes, int64_t nb, uint8_t* group) {
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* col = group + static_cast<size_t>(b) * kQ4kGroupBlockBytes;
    for (int64_t r = 0; r < kQ4kGroupRows; ++r) {
      const BlockQ4K& blk = row_block(rows, row_bytes, r, b);
      std::memcpy(col + 2 * r, &blk.d, 2);
      std::memcpy(col + 32 + 2 * r, &blk.dmin, 2);
      for (int p = 0; p < 12; ++p) col[kScalePlanes + 16 * p + r] = blk.scales[p];
      for (int q = 0; q < 32; ++q) std::memcpy(col + kQuads + 64 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

void deinterleave_q4k_group(const uint8_t* group, int64_t nb, uint8_t* rows, size_t row_bytes) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + static_cast<size_t>(b) * kQ4kGroupBlockBytes;
    for (int64_t r = 0; r < kQ4kGroupRows; ++r) {
      BlockQ4K& blk = row_block(rows, row_bytes, r, b);
      std::memcpy(&blk.d, col + 2 * r, 2);
      std::memcpy(&blk.dmin, col + 32 + 2 * r, 2);
      for (int p = 0; p < 12; ++p) blk.scales[p] = col[kScalePlanes + 16 * p + r];
      for (int q = 0; q < 32; ++q) std::memcpy(blk.qs + 4 * q, col + kQuads + 64 * q + 4 * r, 4);
    }
  }
}

void interleave_q4k(const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst) {
  check_shape(rows, in);
  const int64_t nb = in / 256;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ4K), group_bytes = kQ4kGroupRows * row_bytes;
  std::vector<uint8_t> staged(group_bytes);  // a group's rows, so that dst may be src
  for (int64_t g = 0; g < rows / kQ4kGroupRows; ++g) {
    std::memcpy(staged.data(), src + static_cast<size_t>(g) * group_bytes, group_bytes);
    interleave_q4k_group(staged.data(), row_bytes, nb, dst + static_cast<size_t>(g) * group_bytes);
  }
}

void deinterleave_q4k(const uint8_t* src, int64_t rows, int64_t in, uint8_t* dst) {
  check_shape(rows, in);
  const int64_t nb = in / 256;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockQ4K), group_bytes = kQ4kGroupRows * row_bytes;
  for (int64_t g = 0; g < rows / kQ4kGroupRows; ++g)
    deinterleave_q4k_group(src + static_cast<size_t>(g) * group_bytes, nb, dst + static_cast<size_t>(g) * group_bytes, row_bytes);
}

}  // namespace folio
