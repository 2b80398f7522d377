// 2-D convolution (PyTorch Conv2d semantics: cross-correlation, square kernel, equal zero padding on
// every side) on token-major feature maps, as im2col + matmul.
//
// Maps are stored HWC: pixel (y, x) is row y * W + x, its C channels contiguous. That is the layout
// the ViT encoders work in, so convolutions between transformer stages need no transposes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {

// Output side of a convolution: (in + 2 pad - k) / stride + 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad);

// A convolution's weight [O, C, k, k] as the [O, k * k * C] matrix whose columns go (ky, kx, c):
// the order a patch's pixels lie in an HWC map, so gathering an output pixel's patch copies k runs
// of k * C contiguous floats instead of k * k * C strided ones. The taps are copied once, in the
// weight's own dtype (block formats are expanded to f32); a 1 x 1 kernel is viewed, not copied.
// Read-only once built: any number of threads may convolve with it at once.
class ConvFilter {
 public:
  // Throws InvalidInput naming the weight unless its shape is [O, C, k, k] with k > 0 and C ==
  // in_channels.
  ConvFilter(const TensorView& w, int64_t in_channels);
  // Movable (matrix_ keeps pointing at the moved buffer), not copyable (a copy would point at ours).
  ConvFilter(ConvFilter&&) = default;
  ConvFilter& operator=(ConvFilter&&) = default;
  ConvFilter(const ConvFilter&) = delete;
  ConvFilter& operator=(const ConvFilter&) = delete;

  const TensorView& matrix() const { return matrix_; }
  int64_t out_channels() const { return matrix_.shape[0]; }
  int64_t in_channels() const { return in_channels_; }
  int64_t kernel() const { return kernel_; }

 private:
  int64_t in_channels_ = 0, kernel_ = 0;
  std::vector<uint8_t> taps_;  // the reordered bytes matrix_ points at (empty for 1 x 1)
  TensorView matrix_;
};

// y[Ho * Wo, O] = conv(x[H, W, C]) with filter f and an optional f32 bias [O], read through
// kernels::matmul with `precision` (Bf16 rounds the gathered patches and the weight to bf16 where
// the CPU has AVX512-BF16). Work is done in chunks of output pixels so the im2col buffer stays
// small; a 1 x 1 kernel at stride 1 without padding multiplies x as it is. PyTorch's stride=(stride_h,
// stride_w); output size conv_out_size(H, k, stride_h, pad) x conv_out_size(W, k, stride_w, pad).
// Throws InvalidInput naming the weight if C differs from the filter's or the output would be empty.
void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const ConvFilter& f, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool,
                GemmPrecision precision = GemmPrecision::F32);

// The same with a weight [O, C, k, k] (f32, f16, bf16 or a block format) made into a ConvFilter for
// this call: for callers that convolve with a weight once.
void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision = GemmPrecision::F32);
void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool,
                GemmPrecision precision = GemmPrecision::F32);

}  // namespace folio::kernels
