#include "kernels/cpu/nn_ops.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += xr[i];
    const double mean = s / static_cast<double>(n);
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = xr[i] - mean;
      ss += d * d;
    }
    const float rstd = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) * rstd * w[i] + b[i];
  }
}

void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) yr[i] += b[i];
  }
}

void linear(const TensorView& w, const float* b, const float* x, int64_t n, float* y, ThreadPool& pool,
            GemmPrecision precision) {
  matmul(w, x, n, y, pool, precision);
  add_bias(y, b, n, w.shape[0]);
}

void gelu_erf_inplace(float* x, int64_t n) { detail::table_for(active_isa()).gelu_erf(x, n); }

void quick_gelu_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

}  // namespace folio::kernels
