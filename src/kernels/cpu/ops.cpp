#include "kernels/cpu/ops.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace folio::kernels {

void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * w[i];
  }
}

RopeTable::RopeTable(int64_t d, double th) : head_dim(d), theta(th) {
  if (d <= 0 || d % 2 != 0 || d > 1024) throw_invalid("rope: head_dim must be even and <= 1024, got " + std::to_string(d));
  // Computed in float32 exactly as the HF reference code does, so cached keys match it bit for bit
  // as far as possible: inv_freq = 1 / theta^(2i/d).
  for (int64_t i = 0; i < d / 2; ++i) {
    float e = static_cast<float>(2 * i) / static_cast<float>(d);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(th), e);
  }
}

void apply_rope(float* x, int64_t n_heads, int64_t pos, const RopeTable& t, RopeStyle style) {
  const int64_t d = t.head_dim, half = d / 2;
  // The angle is rounded to float32 like the reference (pos * inv_freq in float32); cos/sin of that
  // angle are then taken precisely.
  float cs[512], sn[512];
  for (int64_t i = 0; i < half; ++i) {
    double a = static_cast<double>(static_cast<float>(pos) * t.inv_freq[i]);
    cs[i] = static_cast<float>(std::cos(a));
    sn[i] = static_cast<float>(std::sin(a));
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * d;
    for (int64_t i = 0; i < half; ++i) {
      int64_t a = style == RopeStyle::RotateHalf ? i : 2 * i;
      int64_t b = style == RopeStyle::RotateHalf ? i + half : 2 * i + 1;
      float x0 = v[a], x1 = v[b];
      v[a] = x0 * cs[i] - x1 * sn[i];
      v[b] = x1 * cs[i] + x0 * sn[i];
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  float inv = static_cast<float>(1.0 / s);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) yr[i] += b[i];
  }
}

}  // namespace folio::kernels
