// Element-wise and row-wise transformer ops on f32 activations.
//
// These are cheap next to the matmuls (O(hidden) per token), so they are written plainly and left
// to the compiler's vectoriser; the weight-streaming kernels live in matmul.h.
#pragma once

#include <cstdint>

namespace folio::kernels {

// y[i] = x[i] / rms(x) * w[i] for each of `rows` rows of width n; rms = sqrt(mean(x^2) + eps).
// `w` may be f32 (weights are converted to f32 once at load for norms). x and y may alias.
void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// How a head's dimensions are paired for rotation.
enum class RopeStyle {
  RotateHalf,   // HF Llama / DeepSeek: pair (i, i + d/2)
  Interleaved,  // GGUF llama (weights permuted by the converter): pair (2i, 2i + 1)
};

// Precomputed inverse frequencies for one head dimension and theta.
struct RopeTable {
  RopeTable(int64_t head_dim, double theta);
  int64_t head_dim;
  double theta;
  float inv_freq[512];
};

// Rotates `n_heads` heads of width table.head_dim stored contiguously at x, for absolute position pos.
void apply_rope(float* x, int64_t n_heads, int64_t pos, const RopeTable& table, RopeStyle style);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// In-place numerically stable softmax over n values.
void softmax(float* x, int64_t n);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

// y[r, i] += b[i] for each of `rows` rows of width n.
void add_bias(float* y, const float* b, int64_t rows, int64_t n);

}  // namespace folio::kernels
