// Element types for weights, activations and KV storage, with exact conversions.
//
// Weights may be stored as f32, f16, bf16 or in llama.cpp's block formats q8_0, q4_0, q5_0, q4_k,
// q5_k, q6_k (layouts in core/quant_blocks.h).
// Activations are always f32. Conversions to/from 16-bit formats round to nearest even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace folio {

// The _X16 types are q4_k, q6_k, q8_0 and q5_0 with their rows interleaved in groups of 16
// (core/row_interleave.h): layouts loaders make in memory where the kernels read them faster, never
// a file's type. Its rows are not
// contiguous, so it converts by whole groups of rows (convert_tensor, to_f32_vector), not through
// convert_to_f32.
enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_X16, Q6_K_X16, Q8_0_X16, Q5_0_X16 };

// True for the block-quantised weight formats (q8_0 and after): their matmuls quantise the
// activations to 8 bits and take integer dot products (kernels/cpu/matmul.h).
inline bool dtype_is_block_quantized(DType t) { return t >= DType::Q8_0; }

// Number of elements that share one storage block (32 for q8_0 / q4_0 / q5_0, 256 for the K formats, else 1).
int64_t dtype_block_elems(DType t);
// Bytes of one storage block (34 for q8_0, 144 for q4_k, ...; the element size for float types).
size_t dtype_block_bytes(DType t);
// Bytes needed for a row of n elements; n must be a multiple of the block size.
size_t dtype_row_bytes(DType t, int64_t n);
const char* dtype_name(DType t);
// Parses "f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_k", "q5_k", "q6_k" (case-insensitive; "float32",
// "bfloat16", "float16" too).
std::optional<DType> parse_dtype(std::string_view s);

// Q8_0 block as stored in GGUF.
struct BlockQ8_0 {
  uint16_t scale_f16;
  int8_t q[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Converts n elements of type t at src into f32 at dst. For block formats n is a multiple of the block.
void convert_to_f32(DType t, const void* src, float* dst, int64_t n);
// Converts n f32 values into type t at dst (block formats: quant_blocks.h's quantizers).
void convert_from_f32(DType t, const float* src, void* dst, int64_t n);

}  // namespace folio
