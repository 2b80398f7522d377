#include "core/dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"
#include "core/quant_blocks.h"

namespace folio {

int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0: return 32;
    case DType::Q5_1:
    case DType::Q8_0_X16:
    case DType::Q5_0_X16: return 32;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q4_K_X16:
    case DType::Q6_K_X16: return 256;
    default: return 1;
  }
}

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::Q8_0: return sizeof(BlockQ8_0);
    case DType::Q4_0: return sizeof(BlockQ4_0);
    case DType::Q5_0: return sizeof(BlockQ5_0);
    case DType::Q5_1: return sizeof(BlockQ5_1);
    case DType::Q4_K: return sizeof(BlockQ4K);
    case DType::Q5_K: return sizeof(BlockQ5K);
    case DType::Q6_K: return sizeof(BlockQ6K);
    case DType::Q4_K_X16: return sizeof(BlockQ4K);  // per row, on average: a group holds 16 rows' blocks
    case DType::Q6_K_X16: return sizeof(BlockQ6K);
    case DType::Q8_0_X16: return sizeof(BlockQ8_0);
    case DType::Q5_0_X16: return sizeof(BlockQ5_0);
  }
  return 0;
}

size_t dtype_row_bytes(DType t, int64_t n) {
  int64_t be = dtype_block_elems(t);
  if (n % be != 0) throw_invalid(std::string("row of ") + std::to_string(n) + " elements is not a multiple of the " +
                                 dtype_name(t) + " block size " + std::to_string(be));
  return static_cast<size_t>(n / be) * dtype_block_bytes(t);
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::Q4_K_X16: return "q4_k_x16";
    case DType::Q6_K_X16: return "q6_k_x16";
    case DType::Q8_0_X16: return "q8_0_x16";
    case DType::Q5_0_X16: return "q5_0_x16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  std::string l(s);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "f32" || l == "float32" || l == "float") return DType::F32;
  if (l == "f16" || l == "float16" || l == "half") return DType::F16;
  if (l == "bf16" || l == "bfloat16") return DType::BF16;
  if (l == "q8_0" || l == "q8") return DType::Q8_0;
  if (l == "q4_0") return DType::Q4_0;
  if (l == "q5_0") return DType::Q5_0;
  if (l == "q5_1") return DType::Q5_1;
  if (l == "q4_k") return DType::Q4_K;
  if (l == "q5_k") return DType::Q5_K;
  if (l == "q6_k") return DType::Q6_K;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow (incl. inf) after rounding
  if (abs < 0x38800000u) {                        // subnormal or zero in f16
    if (abs < 0x33000000u) return sign;           // rounds to zero
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

void convert_to_f32(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::BF16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::Q8_0: {
      auto* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t blk = 0; blk < n / 32; ++blk) {
        float d = f16_to_f32(b[blk].scale_f16);
        for (int j = 0; j < 32; ++j) dst[blk * 32 + j] = d * static_cast<float>(b[blk].q[j]);
      }
      return;
    }
    case DType::Q4_0: dequantize_q4_0(src, dst, n); return;
    case DType::Q5_0: dequantize_q5_0(src, dst, n); return;
    case DType::Q5_1: dequantize_q5_1(src, dst, n); return;
    case DType::Q4_K: dequantize_q4_k(src, dst, n); return;
    case DType::Q5_K: dequantize_q5_k(src, dst, n); return;
    case DType::Q6_K: dequantize_q6_k(src, dst, n); return;
    case DType::Q4_K_X16:
    case DType::Q6_K_X16:
    case DType::Q8_0_X16:
    case DType::Q5_0_X16: break;
  }
  throw_invalid(std::string("convert_to_f32: ") + dtype_name(t) +
                " converts by groups of 16 rows (convert_tensor), not as a run of elements");
}

void convert_from_f32(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::Q8_0: {
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t blk = 0; blk < n / 32; ++blk) {
        const float* x = src + blk * 32;
        float amax = 0.f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
        float d = amax / 127.f;
        float inv = d > 0.f ? 1.f / d : 0.f;
        b[blk].scale_f16 = f32_to_f16(d);
        for (int j = 0; j < 32; ++j) b[blk].q[j] = static_cast<int8_t>(std::lround(x[j] * inv));
      }
      return;
    }
    case DType::Q4_0: quantize_q4_0(src, dst, n); return;
    case DType::Q5_0: quantize_q5_0(src, dst, n); return;
    case DType::Q5_1: quantize_q5_1(src, dst, n); return;
    case DType::Q4_K: quantize_q4_k(src, dst, n); return;
    case DType::Q5_K: quantize_q5_k(src, dst, n); return;
    case DType::Q6_K: quantize_q6_k(src, dst, n); return;
    case DType::Q4_K_X16:
    case DType::Q6_K_X16:
    case DType::Q8_0_X16:
    case DType::Q5_0_X16: break;
  }
  throw_invalid(std::string("convert_from_f32: ") + dtype_name(t) + " is made from rows (interleave_rows), not from floats");
}

}  // namespace folio
