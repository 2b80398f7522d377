// 1-D convolution along a sequence (PyTorch Conv1d semantics, stride 1, zero padding) on
// token-major data: x[T, C] with each step's C channels contiguous, y[T_out, O].
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace folio::kernels {

// w: [O, C, k] (f32, f16 or bf16, read through kernels::matmul); bias: optional f32 [O].
// T_out = T + 2 pad - k + 1. Each output step's window is gathered in (c, j) order, the weight's
// row layout. Throws InvalidInput naming the weight if its shape does not fit C or T_out < 1.
void conv1d_tc(const float* x, int64_t T, int64_t C, const TensorView& w, const float* bias, int64_t pad, float* y,
               ThreadPool& pool);

}  // namespace folio::kernels
