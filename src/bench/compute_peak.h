// Measures the machine's matrix-multiply peak: the roofline that prefill and encoder throughput are
// judged by (bandwidth.h is decode's).
#pragma once

#include "core/thread_pool.h"

namespace folio::kernels {

// Every thread of `pool` multiplies its own n x n f32 matrices with single-threaded OpenBLAS sgemm
// (as matmul's prefill path runs it: one tile per thread), `repeats` times; returns the best
// aggregate rate in GFLOP/s (2 n^3 per product). Sets OpenBLAS to one thread, as matmul does.
// Allocates 3 n^2 floats per thread. Throws InvalidInput if n < 64 or repeats < 1.
double measure_sgemm_gflops(ThreadPool& pool, int n = 1024, int repeats = 3);

// The same for folio's bf16 GEMM (bf16_gemm.h), the peak of GemmPrecision::Bf16 products: every
// thread multiplies its own n x n operands (activations and weights packed once, outside the timing)
// with bf16_gemm. Throws InvalidInput if n < 64, repeats < 1, or !bf16_gemm_supported().
double measure_bf16_gemm_gflops(ThreadPool& pool, int n = 1024, int repeats = 3);

}  // namespace folio::kernels
