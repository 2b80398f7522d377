#include "kernels/cpu/resize_float.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace folio {

namespace {

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs for one axis: output i reads inputs [first[i], first[i] + count[i])
// with weights taps[i * ksize ...].
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<double> taps;
};

Coefficients coefficients(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  const double inverse = 1.0 / filterscale;  // Pillow multiplies by the reciprocal: same rounding
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.taps.assign(static_cast<size_t>(out_size) * c.ksize, 0.0);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Pillow rounds by truncating toward zero after adding 0.5; negatives clamp to 0 either way.
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    double* k = c.taps.data() + static_cast<size_t>(i) * c.ksize;
    double sum = 0.0;
    for (int x = 0; x < hi - lo; ++x) {
      k[x] = triangle((x + lo - center + 0.5) * inverse);
      sum += k[x];
    }
    if (sum != 0.0)
      for (int x = 0; x < hi - lo; ++x) k[x] /= sum;
    c.first[i] = lo;
    c.count[i] = hi - lo;
  }
  return c;
}

}  // namespace

std::vector<float> resize_bilinear_f32(const std::vector<float>& in, int in_w, int in_h, int out_w, int out_h) {
  FOLIO_CHECK_INPUT(in_w > 0 && in_h > 0 && out_w > 0 && out_h > 0,
                    "resize: sizes must be positive (got " + std::to_string(in_w) + "x" + std::to_string(in_h) + " -> " +
                        std::to_string(out_w) + "x" + std::to_string(out_h) + ")");
  FOLIO_CHECK_INPUT(in.size() == static_cast<size_t>(in_w) * in_h, "resize: image holds the wrong number of pixels");
  std::vector<float> cur = in;
  int w = in_w;
  if (out_w != in_w) {
    const Coefficients c = coefficients(in_w, out_w);
    std::vector<float> next(static_cast<size_t>(out_w) * in_h);
    for (int y = 0; y < in_h; ++y) {
      const float* row = cur.data() + static_cast<size_t>(y) * w;
      for (int x = 0; x < out_w; ++x) {
        const double* k = c.taps.data() + static_cast<size_t>(x) * c.ksize;
        double s = 0.0;
        for (int j = 0; j < c.count[x]; ++j) s += row[c.first[x] + j] * k[j];
        next[static_cast<size_t>(y) * out_w + x] = static_cast<float>(s);
      }
    }
    cur.swap(next);
    w = out_w;
  }
  if (out_h != in_h) {
    const Coefficients c = coefficients(in_h, out_h);
    std::vector<float> next(static_cast<size_t>(w) * out_h);
    for (int y = 0; y < out_h; ++y) {
      const double* k = c.taps.data() + static_cast<size_t>(y) * c.ksize;
      for (int x = 0; x < w; ++x) {
        double s = 0.0;
        for (int j = 0; j < c.count[y]; ++j) s += cur[static_cast<size_t>(c.first[y] + j) * w + x] * k[j];
        next[static_cast<size_t>(y) * w + x] = static_cast<float>(s);
      }
    }
    cur.swap(next);
  }
  return cur;
}

}  // namespace folio
