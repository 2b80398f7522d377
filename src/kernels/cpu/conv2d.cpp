#include "kernels/cpu/conv2d.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {

int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad) { return (in + 2 * pad - k) / stride + 1; }

namespace {

void check_weight(const TensorView& w, int64_t C) {
  FOLIO_CHECK_INPUT(w.shape.size() == 4 && w.shape[1] == C && w.shape[2] == w.shape[3] && w.shape[2] > 0,
                    "conv weight '" + w.name + "' has shape " + shape_to_string(w.shape) + ", expected [out, " +
                        std::to_string(C) + ", k, k]");
}

// Output pixel p's patch in (ky, kx, c) order: row k of the patch is k * C floats of x where it
// lies inside the map, zeros where it hangs over the padding.
void gather_patch(const float* x, int64_t H, int64_t W, int64_t C, int64_t k, int64_t iy0, int64_t ix0, float* row) {
  const int64_t kx_lo = std::max<int64_t>(0, -ix0), kx_hi = std::min(k, W - ix0);
  for (int64_t ky = 0; ky < k; ++ky, row += k * C) {
    const int64_t iy = iy0 + ky;
    if (iy < 0 || iy >= H || kx_lo >= kx_hi) {
      std::fill(row, row + k * C, 0.0f);
      continue;
    }
    std::fill(row, row + kx_lo * C, 0.0f);
    std::copy_n(x + (iy * W + ix0 + kx_lo) * C, (kx_hi - kx_lo) * C, row + kx_lo * C);
    std::fill(row + kx_hi * C, row + k * C, 0.0f);
  }
}

}  // namespace

ConvFilter::ConvFilter(const TensorView& w, int64_t in_channels) : in_channels_(in_channels) {
  check_weight(w, in_channels);
  const int64_t O = w.shape[0], C = in_channels, k = w.shape[2], taps = k * k;
  kernel_ = k;
  matrix_ = w;
  matrix_.shape = {O, C * taps};
  if (k == 1) return;  // (c) is already the order
  std::vector<float> f32;
  const void* src = w.data;
  DType dt = w.dtype;
  if (dtype_is_block_quantized(dt)) {  // blocks run along (c, ky, kx): expand, then reorder floats
    f32 = to_f32_vector(w);
    src = f32.data();
    dt = DType::F32;
  }
  const size_t es = dtype_block_bytes(dt);
  taps_.resize(static_cast<size_t>(O * C * taps) * es);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t)
        std::memcpy(taps_.data() + static_cast<size_t>((o * taps + t) * C + c) * es,
                    static_cast<const uint8_t*>(src) + static_cast<size_t>((o * C + c) * taps + t) * es, es);
  matrix_.dtype = dt;
  matrix_.data = taps_.data();
}

void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const ConvFilter& f, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision) {
  const TensorView& w = f.matrix();
  FOLIO_CHECK_INPUT(C == f.in_channels(), "conv '" + w.name + "': the map has " + std::to_string(C) +
                                              " channels, the filter takes " + std::to_string(f.in_channels()));
  FOLIO_CHECK_INPUT(stride_h > 0 && stride_w > 0 && pad >= 0, "conv '" + w.name + "': bad stride/padding");
  const int64_t O = f.out_channels(), k = f.kernel(), K = k * k * C;
  const int64_t Ho = conv_out_size(H, k, stride_h, pad), Wo = conv_out_size(W, k, stride_w, pad);
  FOLIO_CHECK_INPUT(Ho > 0 && Wo > 0, "conv '" + w.name + "': input " + std::to_string(H) + "x" + std::to_string(W) +
                                          " is smaller than the kernel");
  const int64_t n_out = Ho * Wo;
  if (k == 1 && stride_h == 1 && stride_w == 1 && pad == 0) return matmul(w, x, n_out, y, pool, precision, bias);
  // ~16 MiB of im2col rows per chunk, at least 64 pixels (so the sgemm path is used).
  const int64_t chunk = std::max<int64_t>(64, (int64_t{4} << 20) / K);
  std::vector<float> cols(static_cast<size_t>(std::min(chunk, n_out) * K));
  for (int64_t p0 = 0; p0 < n_out; p0 += chunk) {
    const int64_t np = std::min(chunk, n_out - p0);
    pool.parallel_for(np, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t oy = (p0 + p) / Wo, ox = (p0 + p) % Wo;
        gather_patch(x, H, W, C, k, oy * stride_h - pad, ox * stride_w - pad, cols.data() + p * K);
      }
    });
    matmul(w, cols.data(), np, y + p0 * O, pool, precision, bias);
  }
}

void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision) {
  conv2d_hwc(x, H, W, C, w, bias, stride, stride, pad, y, pool, precision);
}

void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision) {
  conv2d_hwc(x, H, W, C, ConvFilter(w, C), bias, stride_h, stride_w, pad, y, pool, precision);
}

}  // namespace folio::kernels
