// Row-wise ops of the vision encoders (ViT blocks) on f32 activations stored token-major
// ([rows, n], one token's channels contiguous).
//
// Like ops.h these are O(n) per token next to the matmuls, written plainly for the vectoriser.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {

// LayerNorm over each of `rows` rows of width n: mean and biased variance of the row,
// y = (x - mean) / sqrt(var + eps) * w + b. Statistics are accumulated in double. x and y may alias.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps);
// The same with the rows split over `pool` (each row computed exactly as above, so the bits do not
// depend on the split): the encoders' 4,096-token maps would otherwise leave a thread idle.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps,
                ThreadPool& pool);

// y[r, i] += b[i] for each of `rows` rows of width n.
void add_bias(float* y, const float* b, int64_t rows, int64_t n);

// A linear layer: y [n, out] = x [n, in] . w^T + b, w [out, in] multiplied by matmul with
// `precision` and b (out values) as its bias. Throws as matmul does.
void linear(const TensorView& w, const float* b, const float* x, int64_t n, float* y, ThreadPool& pool,
            GemmPrecision precision = GemmPrecision::F32);

// x = 0.5 x (1 + erf(x / sqrt 2)), the exact GELU (SAM's MLP); erf to within 1.5e-7 absolute
// on AVX2 / AVX-512 (a vector approximation), std::erf under FOLIO_ISA=scalar.
void gelu_erf_inplace(float* x, int64_t n);
// The same split over `pool` (element-wise, so the same bits).
void gelu_erf_inplace(float* x, int64_t n, ThreadPool& pool);

// x = x * sigmoid(1.702 x) (CLIP's quick_gelu).
void quick_gelu_inplace(float* x, int64_t n);
// The same split over `pool` (element-wise, so the same bits).
void quick_gelu_inplace(float* x, int64_t n, ThreadPool& pool);

}  // namespace folio::kernels
