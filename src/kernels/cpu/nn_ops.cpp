#include "kernels/cpu/nn_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/ops.h"

namespace folio::kernels {

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps) {
  detail::table_for(active_isa()).layer_norm(x, w, b, y, rows, n, eps);
}

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps,
                ThreadPool& pool) {
  pool.parallel_for(rows, [&](int64_t r0, int64_t r1) { layer_norm(x + r0 * n, w, b, y + r0 * n, r1 - r0, n, eps); });
}

void linear(const TensorView& w, const float* b, const float* x, int64_t n, float* y, ThreadPool& pool,
            GemmPrecision precision) {
  matmul(w, x, n, y, pool, precision, b);
}

namespace {

// Input row r of `in` into dst (width floats), or nullptr for a padding row.
const float* normed_row(const NormedRows& in, int64_t r, float* dst) {
  const int64_t src = in.map ? in.map[r] : r;
  if (src < 0) return nullptr;
  layer_norm(in.x + src * in.width, in.w, in.b, dst, 1, in.width, in.eps);
  return dst;
}

}  // namespace

void NormedRows::write(int64_t n, float* y, ThreadPool& pool) const {
  pool.parallel_for(n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* dst = y + r * width;
      if (!normed_row(*this, r, dst)) std::fill(dst, dst + width, 0.0f);
    }
  });
}

Bf16Activations NormedRows::pack(int64_t n, ThreadPool& pool) const {
  return Bf16Activations(n, width, [this](int64_t r, float* scratch) { return normed_row(*this, r, scratch); }, pool);
}

namespace {

// True when both of an MLP's products over n rows take the bf16 GEMM, so they can be fused.
bool mlp_takes_bf16_gemm(const TensorView& w1, const TensorView& w2, int64_t n, GemmPrecision precision) {
  return matmul_takes_bf16_gemm(w1, n, precision) && matmul_takes_bf16_gemm(w2, n, precision) && w1.shape[0] == w2.shape[1];
}

// The fused bf16 MLP on its packed input: lin1's activated sums go straight into lin2's input.
void mlp_bf16(const TensorView& w1, const float* b1, Activation act, const TensorView& w2, const float* b2,
              const Bf16Activations& x, float* y, MlpScratch& hidden, ThreadPool& pool) {
  matmul_bf16_activated(w1, x, b1, act, hidden.bf16, pool);
  matmul_bf16(w2, hidden.bf16, y, pool, b2);
}

}  // namespace

void mlp(const TensorView& w1, const float* b1, Activation act, const TensorView& w2, const float* b2,
         const NormedRows& in, int64_t n, float* y, MlpScratch& hidden, ThreadPool& pool, GemmPrecision precision) {
  if (mlp_takes_bf16_gemm(w1, w2, n, precision)) return mlp_bf16(w1, b1, act, w2, b2, in.pack(n, pool), y, hidden, pool);
  in.write(n, y, pool);
  mlp(w1, b1, act, w2, b2, y, n, y, hidden, pool, precision);
}

void mlp(const TensorView& w1, const float* b1, Activation act, const TensorView& w2, const float* b2, const float* x,
         int64_t n, float* y, MlpScratch& hidden, ThreadPool& pool, GemmPrecision precision) {
  if (mlp_takes_bf16_gemm(w1, w2, n, precision))
    return mlp_bf16(w1, b1, act, w2, b2, Bf16Activations(x, n, w1.shape[1], pool), y, hidden, pool);
  const int64_t width = w1.shape.size() == 2 ? w1.shape[0] : 0;
  hidden.f32.resize(static_cast<size_t>(n * width));
  linear(w1, b1, x, n, hidden.f32.data(), pool, precision);
  if (act == Activation::GeluErf) gelu_erf_inplace(hidden.f32.data(), n * width, pool);
  else quick_gelu_inplace(hidden.f32.data(), n * width, pool);
  linear(w2, b2, hidden.f32.data(), n, y, pool, precision);
}

void gelu_erf_inplace(float* x, int64_t n) { detail::table_for(active_isa()).gelu_erf(x, n); }

void quick_gelu_inplace(float* x, int64_t n) { detail::table_for(active_isa()).quick_gelu(x, n); }

namespace {

// Runs fn(x + b, e - b) over chunks of [0, n) split over the pool, in whole cache lines.
template <typename Fn>
void split_elements(float* x, int64_t n, ThreadPool& pool, Fn fn) {
  constexpr int64_t kLine = 16;
  pool.parallel_for((n + kLine - 1) / kLine, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kLine, hi = std::min(n, e * kLine);
    fn(x + lo, hi - lo);
  });
}

}  // namespace

void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool) {
  split_elements(y, n, pool, [&](float* p, int64_t m) { add_inplace(p, x + (p - y), m); });
}

void gelu_erf_inplace(float* x, int64_t n, ThreadPool& pool) {
  split_elements(x, n, pool, [](float* p, int64_t m) { gelu_erf_inplace(p, m); });
}

void quick_gelu_inplace(float* x, int64_t n, ThreadPool& pool) {
  split_elements(x, n, pool, [](float* p, int64_t m) { quick_gelu_inplace(p, m); });
}

}  // namespace folio::kernels
