#include "kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace folio::kernels {

namespace {

// Keys cubic convolution kernel, a = -0.5, written in the same operation order as PyTorch's
// antialias filter so the float weights round the same way.
float cubic_aa(float x) {
  constexpr float a = -0.5f;
  x = std::fabs(x);
  if (x < 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
  if (x < 2.0f) return ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
  return 0.0f;
}

struct Taps {
  std::vector<int64_t> first;  // first input index of each output
  std::vector<int64_t> count;  // taps of each output
  std::vector<float> weights;  // [out][max_taps]
  int64_t max_taps = 0;
};

Taps bicubic_aa_taps(int64_t in, int64_t out) {
  Taps t;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0f ? 2.0f * scale : 2.0f;
  const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  t.max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weights.assign(static_cast<size_t>(out * t.max_taps), 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const float center = scale * (static_cast<float>(o) + 0.5f);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5f), 0);
    const int64_t xsize = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5f), in) - xmin;
    float* w = t.weights.data() + o * t.max_taps;
    float total = 0.0f;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = cubic_aa((static_cast<float>(j + xmin) - center + 0.5f) * invscale);
      total += w[j];
    }
    if (total != 0.0f)
      for (int64_t j = 0; j < xsize; ++j) w[j] /= total;
    t.first[static_cast<size_t>(o)] = xmin;
    t.count[static_cast<size_t>(o)] = xsize;
  }
  return t;
}

}  // namespace

void resize_bicubic_aa_hwc(const float* in, int64_t H, int64_t W, int64_t C, float* out, int64_t Ho, int64_t Wo) {
  // Width pass: [H, W, C] -> [H, Wo, C].
  const Taps tw = bicubic_aa_taps(W, Wo);
  std::vector<float> mid(static_cast<size_t>(H * Wo * C));
  for (int64_t y = 0; y < H; ++y)
    for (int64_t ox = 0; ox < Wo; ++ox) {
      const float* w = tw.weights.data() + ox * tw.max_taps;
      const int64_t x0 = tw.first[static_cast<size_t>(ox)], nt = tw.count[static_cast<size_t>(ox)];
      float* dst = mid.data() + (y * Wo + ox) * C;
      for (int64_t c = 0; c < C; ++c) {
        float acc = in[(y * W + x0) * C + c] * w[0];
        for (int64_t j = 1; j < nt; ++j) acc += in[(y * W + x0 + j) * C + c] * w[j];
        dst[c] = acc;
      }
    }
  // Height pass: [H, Wo, C] -> [Ho, Wo, C].
  const Taps th = bicubic_aa_taps(H, Ho);
  for (int64_t oy = 0; oy < Ho; ++oy) {
    const float* w = th.weights.data() + oy * th.max_taps;
    const int64_t y0 = th.first[static_cast<size_t>(oy)], nt = th.count[static_cast<size_t>(oy)];
    for (int64_t ox = 0; ox < Wo; ++ox) {
      float* dst = out + (oy * Wo + ox) * C;
      for (int64_t c = 0; c < C; ++c) {
        float acc = mid[static_cast<size_t>(((y0)*Wo + ox) * C + c)] * w[0];
        for (int64_t j = 1; j < nt; ++j) acc += mid[static_cast<size_t>(((y0 + j) * Wo + ox) * C + c)] * w[j];
        dst[c] = acc;
      }
    }
  }
}

void resize_linear_rows(const float* in, int64_t L, int64_t C, float* out, int64_t Lo) {
  const float scale = static_cast<float>(L) / static_cast<float>(Lo);
  for (int64_t i = 0; i < Lo; ++i) {
    const float src = std::max(scale * (static_cast<float>(i) + 0.5f) - 0.5f, 0.0f);
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), L - 1);
    const int64_t i1 = i0 < L - 1 ? i0 + 1 : i0;
    const float l1 = std::clamp(src - static_cast<float>(i0), 0.0f, 1.0f), l0 = 1.0f - l1;
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = l0 * in[i0 * C + c] + l1 * in[i1 * C + c];
  }
}

}  // namespace folio::kernels
