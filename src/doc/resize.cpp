#include "doc/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <string>

#include "core/error.h"

namespace folio {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Fixed-point taps for one axis: output o reads inputs [first[o], first[o] + count[o]) with
// weights k[o * ksize + j]. The arithmetic follows Pillow's precompute_coeffs step by step
// (double precision, reciprocal multiply, truncating casts) so the rounded weights agree.
struct Coeffs {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> k;
};

Coeffs precompute(int in_size, int out_size) {
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = 2.0 * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      c.k[static_cast<size_t>(o) * c.ksize + x] =
          v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits)) : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[o] = xmin;
    c.count[o] = xmax;
  }
  return c;
}

inline uint8_t clip8(int32_t acc) {
  if (acc >= (1 << kPrecisionBits << 8)) return 255;
  if (acc <= 0) return 0;
  return static_cast<uint8_t>(acc >> kPrecisionBits);
}

RgbImage horizontal(const RgbImage& in, int out_w) {
  const Coeffs c = precompute(in.width, out_w);
  RgbImage out(out_w, in.height);
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* src = in.row(y);
    uint8_t* dst = out.row(y);
    for (int o = 0; o < out_w; ++o) {
      const int32_t* k = &c.k[static_cast<size_t>(o) * c.ksize];
      const uint8_t* s = src + static_cast<size_t>(c.first[o]) * 3;
      int32_t a0 = 1 << (kPrecisionBits - 1), a1 = a0, a2 = a0;
      for (int j = 0; j < c.count[o]; ++j) {
        a0 += s[3 * j] * k[j];
        a1 += s[3 * j + 1] * k[j];
        a2 += s[3 * j + 2] * k[j];
      }
      dst[3 * o] = clip8(a0);
      dst[3 * o + 1] = clip8(a1);
      dst[3 * o + 2] = clip8(a2);
    }
  }
  return out;
}

RgbImage vertical(const RgbImage& in, int out_h) {
  const Coeffs c = precompute(in.height, out_h);
  RgbImage out(in.width, out_h);
  const size_t row_len = static_cast<size_t>(in.width) * 3;
  std::vector<int32_t> acc(row_len);
  for (int o = 0; o < out_h; ++o) {
    const int32_t* k = &c.k[static_cast<size_t>(o) * c.ksize];
    // Row-wise accumulation: same sums as Pillow's per-pixel loop (integer addition is exact).
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int j = 0; j < c.count[o]; ++j) {
      const uint8_t* s = in.row(c.first[o] + j);
      const int32_t kj = k[j];
      for (size_t i = 0; i < row_len; ++i) acc[i] += s[i] * kj;
    }
    uint8_t* dst = out.row(o);
    for (size_t i = 0; i < row_len; ++i) dst[i] = clip8(acc[i]);
  }
  return out;
}

}  // namespace

RgbImage resize_bicubic(const RgbImage& image, int width, int height) {
  FOLIO_CHECK_INPUT(width > 0 && height > 0, "resize target " + std::to_string(width) + "x" + std::to_string(height) +
                                                 " must be positive");
  FOLIO_CHECK_INPUT(image.width > 0 && image.height > 0, "cannot resize an empty image");
  if (width == image.width && height == image.height) return image;
  if (width == image.width) return vertical(image, height);
  if (height == image.height) return horizontal(image, width);
  return vertical(horizontal(image, width), height);
}

}  // namespace folio
