// Matrix and vector kernels over weights stored as f32, f16, bf16 or a block format (q8_0, q4_0,
// q4_k, q5_k, q6_k: core/quant_blocks.h); activations are f32.
//
// Every kernel runs on the instruction set active_isa() reports (cpu_features.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_gemm.h"

namespace folio::kernels {

// The arithmetic of matmul's large-n path. F32: f32 products (OpenBLAS sgemm). Bf16: X and W rounded
// to bf16 (a block format's weights dequantised first), products summed in f32 (bf16_gemm.h), about
// twice as fast; taken only where bf16_gemm_supported(), else F32 runs. The small-n (GEMV) path is
// the same for both.
enum class GemmPrecision { F32, Bf16 };

// "f32", "bf16".
const char* gemm_precision_name(GemmPrecision p);

// The precision a user named: "f32", "bf16", or "auto" (Bf16 where bf16_gemm_supported(), else F32).
// Throws InvalidInput naming `what` for any other text, and for "bf16" on a CPU without AVX512-BF16.
GemmPrecision gemm_precision_from_name(std::string_view name, std::string_view what);

// Y[n, out] = X[n, in] * W^T, where w is 2-D [out, in] (any DType; for a block format, in is a
// multiple of its block) and x, y are contiguous row-major f32. y must not overlap x or w.
//
// Work is split over output rows with `pool`; results are bit-identical for any pool size.
// Small n (decode, n < matmul_gemm_min_rows()) streams each weight row once for all n input rows,
// accumulating in f32; each output is then also independent of n (batching does not change a
// token's result). Block-quantised weights take llama.cpp's route: each input row is quantised to
// 8 bits per block (ActQ8 / ActQ8K), and each weight block's exact integer dot with it is scaled
// and summed in a fixed order, so every ISA gives the same bits (quant_dot_impl.h). Larger n (prefill) converts tiles of W to f32 and multiplies them with
// single-threaded OpenBLAS sgemm calls, one tile per pool thread at a time: the first such call
// sets OpenBLAS's (process-wide) thread count to 1.
// With `precision` Bf16 (where it applies, see GemmPrecision) the large-n path multiplies in bf16
// instead; its results are also bit-identical for any pool size. Given `bias` (out floats), y[i, c]
// gets bias[c] too: added after the products, except in the bf16 GEMM, whose sums start from it.
// Throws Error(InvalidInput) naming the weight if w is not 2-D, has no data, or in is not a
// multiple of its block; or if n < 0.
void matmul(const TensorView& w, const float* x, int64_t n, float* y, ThreadPool& pool,
            GemmPrecision precision = GemmPrecision::F32, const float* bias = nullptr);

// True when matmul with `precision` multiplies w in bf16 at a large n: Bf16 asked for and the CPU
// has it (every dtype qualifies, block formats dequantised first).
bool matmul_uses_bf16(const TensorView& w, GemmPrecision precision);

// True when matmul(w, x, n, ...) with `precision` runs the bf16 GEMM (a large n, not under a
// RowInvariantScope, bf16 asked for and available).
bool matmul_takes_bf16_gemm(const TensorView& w, int64_t n, GemmPrecision precision);

// The bf16 GEMM on activations already rounded and packed: y [x.rows(), out] = x . w^T (+ bias as
// in matmul), x.width() == w's in. Precondition: bf16_gemm_supported().
void matmul_bf16(const TensorView& w, const Bf16Activations& x, float* y, ThreadPool& pool, const float* bias = nullptr);

// The same products rounded to bf16 (bf16_gemm_to_bf16): y [x.rows(), out] as bf16 values, the bits
// packing matmul_bf16's output would round to. Precondition: bf16_gemm_supported().
void matmul_bf16_rounded(const TensorView& w, const Bf16Activations& x, uint16_t* y, ThreadPool& pool,
                         const float* bias = nullptr);

// act(x . w^T + bias) as the packed bf16 input of a next product (bf16_gemm_to_activations): y is
// reset to [x.rows(), out]. Precondition: bf16_gemm_supported().
void matmul_bf16_activated(const TensorView& w, const Bf16Activations& x, const float* bias, Activation act,
                           Bf16Activations& y, ThreadPool& pool);

// Smallest n that takes the sgemm path. The setter is for tests and benchmarks (n <= 1 forces the
// sgemm path, a huge n the GEMV path); like set_isa, not to be called while matmuls are running.
int64_t matmul_gemm_min_rows();
void set_matmul_gemm_min_rows(int64_t n);

// While a RowInvariantScope lives, matmul and matmul_many on the thread that made it take the GEMV
// path for any n, so each output row is the same bits whatever rows share the call (sgemm's are
// not: OpenBLAS rounds a row by its place among the call's rows and their count). Decode steps of
// several sequences run under it, so a sequence's tokens do not depend on the load. Scopes nest;
// a thread pool's workers do not inherit it (a caller running work on them makes its own there).
class RowInvariantScope {
 public:
  explicit RowInvariantScope(bool active = true);
  ~RowInvariantScope();
  RowInvariantScope(const RowInvariantScope&) = delete;
  RowInvariantScope& operator=(const RowInvariantScope&) = delete;
  static bool active_on_this_thread();

 private:
  bool previous_;
};

// sum_i a[i] * b[i] with b stored as f32, f16 or bf16 (a KV-cache row). Throws InvalidInput for a
// block format.
// One product y[n, out] = x[n, in] . W^T of a batch given to matmul_many.
struct MatmulJob {
  const TensorView* w = nullptr;
  const float* x = nullptr;
  int64_t n = 0;
  float* y = nullptr;
};

// Runs several independent matmuls. Jobs with few input rows (the decode case: q/k/v projections,
// the experts a token chose) share ONE parallel pass over their concatenated weight rows, so the
// threads stream all the weights back to back instead of meeting at a barrier after each small
// matrix. Jobs with many rows go through matmul() one by one. Results equal matmul() per job.
// `precision` is that of the jobs with many rows.
void matmul_many(std::span<const MatmulJob> jobs, ThreadPool& pool, GemmPrecision precision = GemmPrecision::F32);

float dot(const float* a, const void* b, DType bt, int64_t n);

// y[i] += alpha * x[i] with x stored as f32, f16 or bf16. Throws InvalidInput for a block format.
void axpy(float alpha, const void* x, DType xt, float* y, int64_t n);

}  // namespace folio::kernels
