// 2-D convolution (PyTorch Conv2d semantics: cross-correlation, square kernel, equal zero padding on
// every side) on token-major feature maps, as im2col + matmul.
//
// Maps are stored HWC: pixel (y, x) is row y * W + x, its C channels contiguous. That is the layout
// the ViT encoders work in, so convolutions between transformer stages need no transposes.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {

// Output side of a convolution: (in + 2 pad - k) / stride + 1.
int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad);

// y[Ho * Wo, O] = conv(x[H, W, C]) with weight w [O, C, k, k] (f32, f16 or bf16; read through
// kernels::matmul with `precision`: Bf16 rounds the gathered patches and the weight to bf16 where the
// CPU has AVX512-BF16) and an optional f32 bias [O]. Each output pixel's patch is gathered in (c, ky, kx)
// order, which is the weight's row layout. Work is done in chunks of output pixels so the im2col
// buffer stays small. Throws InvalidInput naming the weight if its shape does not fit C or is not
// square, or if the output would be empty.
void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride, int64_t pad, float* y, ThreadPool& pool, GemmPrecision precision = GemmPrecision::F32);

// The same with separate vertical and horizontal strides (PyTorch stride=(stride_h, stride_w));
// output size conv_out_size(H, k, stride_h, pad) x conv_out_size(W, k, stride_w, pad).
void conv2d_hwc(const float* x, int64_t H, int64_t W, int64_t C, const TensorView& w, const float* bias,
                int64_t stride_h, int64_t stride_w, int64_t pad, float* y, ThreadPool& pool,
                GemmPrecision precision = GemmPrecision::F32);

}  // namespace folio::kernels
