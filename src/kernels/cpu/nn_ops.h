// Row-wise ops of the vision encoders (ViT blocks) on f32 activations stored token-major
// ([rows, n], one token's channels contiguous).
//
// Like ops.h these are O(n) per token next to the matmuls, written plainly for the vectoriser.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"

namespace folio::kernels {

// LayerNorm over each of `rows` rows of width n: mean and biased variance of the row,
// y = (x - mean) / sqrt(var + eps) * w + b. Statistics are accumulated in double. x and y may alias.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps);
// The same with the rows split over `pool` (each row computed exactly as above, so the bits do not
// depend on the split): the encoders' 4,096-token maps would otherwise leave a thread idle.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps,
                ThreadPool& pool);

// The LayerNorm of rows of x ([*, width], rows contiguous) as the input of a product, gathered:
// input row r is layer_norm(x row map[r]), or zeros where map[r] < 0 (SAM's window padding); with
// no map, row r. On the bf16 GEMM the rows are normalised as they are packed (pack), so the f32
// map is never written; the other paths take it written out (write). Either way the products see
// the bits of layer_norm followed by the gather.
struct NormedRows {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* b = nullptr;
  float eps = 0.0f;
  int64_t width = 0;
  const int64_t* map = nullptr;

  // The n input rows into y ([n, width]), split over pool.
  void write(int64_t n, float* y, ThreadPool& pool) const;
  // The n input rows packed for the bf16 GEMM. Precondition: bf16_gemm_supported().
  Bf16Activations pack(int64_t n, ThreadPool& pool) const;
};

// y += x over n floats (a block's residual add), split over `pool` (element-wise: the bits of
// ops.h's add_inplace).
void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool);

// A linear layer: y [n, out] = x [n, in] . w^T + b, w [out, in] multiplied by matmul with
// `precision` and b (out values) as its bias. Throws as matmul does.
void linear(const TensorView& w, const float* b, const float* x, int64_t n, float* y, ThreadPool& pool,
            GemmPrecision precision = GemmPrecision::F32);

// The hidden layer of mlp(), kept by the caller between calls: f32 on the f32 paths, packed bf16
// on the bf16 GEMM.
struct MlpScratch {
  std::vector<float> f32;
  Bf16Activations bf16;
};

// A ViT block's MLP: y [n, out] = w2 . act(w1 . x + b1) + b2 (w1 [hidden, in], w2 [out, hidden]),
// both products by matmul with `precision`. When matmul would run them on the bf16 GEMM, lin1's
// sums get their bias and activation in registers and go straight into lin2's packed bf16 input
// (bf16_gemm_to_activations): the [n, hidden] f32 map is never written, and the bits are those of
// linear, the activation and linear under the AVX-512 kernel table. x and y may alias. Throws as
// matmul does.
void mlp(const TensorView& w1, const float* b1, Activation act, const TensorView& w2, const float* b2, const float* x,
         int64_t n, float* y, MlpScratch& hidden, ThreadPool& pool, GemmPrecision precision);
// The same on n LayerNorm'd rows; y (n rows) holds them first on the f32 paths. The bits of
// in.write and mlp.
void mlp(const TensorView& w1, const float* b1, Activation act, const TensorView& w2, const float* b2,
         const NormedRows& in, int64_t n, float* y, MlpScratch& hidden, ThreadPool& pool, GemmPrecision precision);

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
