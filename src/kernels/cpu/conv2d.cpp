#include "kernels/cpu/conv2d.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {

int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad) { return (in + 2 * pad - k) / stride + 1; }

void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision) {
  conv2d_hwc(x, H, W, C, w, bias, stride, stride, pad, y, pool, precision);
}

void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision) {
  FOLIO_CHECK_INPUT(w.shape.size() == 4 && w.shape[1] == C && w.shape[2] == w.shape[3] && w.shape[2] > 0,
                    "conv weight '" + w.name + "' has shape " + shape_to_string(w.shape) + ", expected [out, " +
                        std::to_string(C) + ", k, k]");
  FOLIO_CHECK_INPUT(stride_h > 0 && stride_w > 0 && pad >= 0, "conv '" + w.name + "': bad stride/padding");
  const int64_t O = w.shape[0], k = w.shape[2];
  const int64_t Ho = conv_out_size(H, k, stride_h, pad), Wo = conv_out_size(W, k, stride_w, pad);
  FOLIO_CHECK_INPUT(Ho > 0 && Wo > 0, "conv '" + w.name + "': input " + std::to_string(H) + "x" + std::to_string(W) +
                                          " is smaller than the kernel");
  TensorView w2 = w;  // the same bytes seen as a [O, C*k*k] matrix
  w2.shape = {O, C * k * k};
  const int64_t K = C * k * k;
  const int64_t n_out = Ho * Wo;
  // ~16 MiB of im2col rows per chunk, at least 64 pixels (so the sgemm path is used).
  const int64_t chunk = std::max<int64_t>(64, (int64_t{4} << 20) / K);
  std::vector<float> cols(static_cast<size_t>(std::min(chunk, n_out) * K));
  for (int64_t p0 = 0; p0 < n_out; p0 += chunk) {
    const int64_t np = std::min(chunk, n_out - p0);
    pool.parallel_for(np, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t oy = (p0 + p) / Wo, ox = (p0 + p) % Wo;
        float* row = cols.data() + p * K;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < k; ++ky) {
            const int64_t iy = oy * stride_h - pad + ky;
            float* dst = row + (c * k + ky) * k;
            for (int64_t kx = 0; kx < k; ++kx) {
              const int64_t ix = ox * stride_w - pad + kx;
              dst[kx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x[(iy * W + ix) * C + c] : 0.0f;
            }
          }
      }
    });
    matmul(w2, cols.data(), np, y + p0 * O, pool, precision, bias);
  }
}

}  // namespace folio::kernels
