// Internal to the CPU kernels: one table of kernel entry points per instruction set.
//
// matmul.cpp validates arguments, splits work across threads and picks the table for the active
// Isa; the ISA files (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp) fill the tables
// from the shared bodies in kernels_impl.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_features.h"

namespace folio::kernels::detail {

// y[g * ldy + r] = <row r of W, row g of x> for r in [r0, r1), g in [0, n). W rows are `row_bytes`
// apart and hold `in` elements; x is [n, in] contiguous f32. Each output is computed in an order
// that depends only on `in`, so results do not change with r0/r1 (thread split) or n (batch).
using GemvFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t in, int64_t r0, int64_t r1, const float* x,
                        int64_t n, float* y, int64_t ldy);
// The same for block-quantised weights (q8_0, q4_0, q5_0, q4_k, q5_k, q6_k) against activation rows
// already quantised (core/quant_blocks.h: ActQ8 blocks for q8_0 / q4_0, ActQ8K for the K formats;
// row g of xq is in / 32 resp. in / 256 blocks). Same independence from r0, r1 and n.
using QGemvFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t in, int64_t r0, int64_t r1, const void* xq,
                         int64_t n, float* y, int64_t ldy);
// Converts `rows` weight rows into dst ([rows, in] f32, contiguous).
using RowsToF32Fn = void (*)(const uint8_t* w, size_t row_bytes, int64_t in, int64_t rows, float* dst);
using DotFn = float (*)(const float* a, const void* b, int64_t n);
using AxpyFn = void (*)(float alpha, const void* x, float* y, int64_t n);
// Attention over `rows` cached rows `stride` bytes apart, each `n` elements:
//   dot_rows:  out[t] = scale * <q, row t>
//   axpy_rows: y += sum_t p[t] * row t
using DotRowsFn = void (*)(const float* q, const uint8_t* rows, size_t stride, int64_t count, int64_t n, float scale,
                           float* out);
// x[i] = exp(x[i] - m) for i < n; returns the sum (softmax numerators and denominator).
using ExpSumFn = double (*)(float* x, int64_t n, float m);
// x[i] = gelu(x[i]) = 0.5 x (1 + erf(x / sqrt 2)) for i < n (erf to ~1.5e-7 absolute on SIMD tables).
using GeluFn = void (*)(float* x, int64_t n);
using AxpyRowsFn = void (*)(const float* p, const uint8_t* rows, size_t stride, int64_t count, int64_t n, float* y);
// The same over quantised KV rows (kv_quant.h; q4 codes two per byte):
//   dot_code_rows:  out[t] = <qs, codes of row t> + bias (qs, bias: the query with the key group's
//                   per-channel scales and minima folded in)
//   axpy_code_rows: y[j*seg + c] += sum_t p[t] * (s_tj * code_t,j*seg+c + m_tj) for segments j < nseg,
//                   s_tj, m_tj (m for q4 only) the f16 parameters of group first_group + j of row t
using DotCodeRowsFn = void (*)(const float* qs, const uint8_t* codes, size_t stride, int64_t count, int64_t n, float bias,
                               float* out);
using AxpyCodeRowsFn = void (*)(const float* p, const uint8_t* codes, size_t stride, const uint16_t* params,
                                size_t param_stride, int64_t first_group, int64_t seg, int64_t nseg, int64_t count, float* y);

// c [rows, npanels * 16] = exact int32 sums of input rows times int8 weight panels (int8_gemm.h's
// layout), where row r's inputs are `taps` runs of `tap_len` u8 codes (<= 127; tap_len a multiple
// of 4), run t starting at a + r * lda + tap_offsets[t]: a plain matrix (one tap at 0) or a
// convolution read straight from its padded input.
using GemmInt8SumsFn = void (*)(const uint8_t* a, int64_t rows, int64_t lda, const int64_t* tap_offsets, int64_t taps,
                                int64_t tap_len, const int8_t* panels, int64_t npanels, int32_t* c);

// The largest int32 bit pattern among x[0..n) and 0 (for non-negative floats, the largest value).
using MaxBitsFn = int32_t (*)(const float* x, int64_t n);
// q[i] = int(min(max(x[i], 0) * inv + 0.5, 127)), each operation rounded on its own (no FMA).
using QuantizeU7Fn = void (*)(const float* x, int64_t n, float inv, uint8_t* q);

// Quantises n floats (a multiple of the block) into the ActQ8 (blocks of 32) or ActQ8K (256)
// blocks of core/quant_blocks.h, the same bytes as its quantize_act_q8 / quantize_act_q8k.
using QuantizeActFn = void (*)(const float* x, void* dst, int64_t n);
// LayerNorm of `rows` rows of width n (nn_ops.h's layer_norm), the same bits on every table.
using LayerNormFn = void (*)(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n,
                             float eps);

struct KernelTable {
  GemvFn gemv[3];          // indexed by DType: F32, F16, BF16
  // Indexed by DType - Q8_0: Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and the _X16 types. The
  // interleaved formats' r0 and r1 are multiples of 16 (whole groups) and their results the bits of
  // their row format's on the same rows.
  QGemvFn qgemv[11];
  RowsToF32Fn to_f32[14];  // indexed by DType (the interleaved formats: whole groups of rows)
  DotFn dot[3];            // F32, F16, BF16
  AxpyFn axpy[3];          // F32, F16, BF16
  DotRowsFn dot_rows[3];   // F32, F16, BF16
  AxpyRowsFn axpy_rows[3]; // F32, F16, BF16
  DotCodeRowsFn dot_code_rows[2];    // Q8, Q4
  AxpyCodeRowsFn axpy_code_rows[2];  // Q8, Q4
  ExpSumFn exp_sum;
  GeluFn gelu_erf;
  GeluFn quick_gelu;  // x = x * sigmoid(1.702 x)
  GemmInt8SumsFn gemm_int8_sums;
  MaxBitsFn max_bits;
  QuantizeU7Fn quantize_u7;
  QuantizeActFn quantize_act[2];  // ActQ8, ActQ8K
  LayerNormFn layer_norm;
};

const KernelTable& scalar_table();
// Only valid to call when the CPU supports the instruction set (see best_isa()).
const KernelTable& avx2_table();
const KernelTable& avx512_table();      // picks avx512_vnni_table() where the CPU has VNNI
const KernelTable& avx512_vnni_table();
const KernelTable& avx512_plain_table();  // AVX-512 without VNNI even where the CPU has it (tests)

inline const KernelTable& table_for(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return avx512_table();
    case Isa::Avx2: return avx2_table();
    case Isa::Scalar: break;
  }
  return scalar_table();
}

}  // namespace folio::kernels::detail
