#include "bench/compute_peak.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/bf16_gemm.h"

namespace folio::kernels {

namespace {

// The best aggregate GFLOP/s of `repeats` timed calls of run_all (after one untimed), each doing
// 2 n^3 flops per thread.
template <typename Fn>
double best_gflops(ThreadPool& pool, int n, int repeats, Fn run_all) {
  run_all();  // warm-up: pages touched, buffers allocated
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run_all();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) * pool.size() / s / 1e9);
  }
  return best;
}

}  // namespace

double measure_sgemm_gflops(ThreadPool& pool, int n, int repeats) {
  FOLIO_CHECK_INPUT(n >= 64 && repeats >= 1, "measure_sgemm_gflops: n must be at least 64 and repeats at least 1");
  openblas_set_num_threads(1);
  const size_t elems = static_cast<size_t>(n) * n;
  const int threads = pool.size();
  std::vector<std::vector<float>> a(threads, std::vector<float>(elems, 0.5f)), b(threads, std::vector<float>(elems, 0.25f)),
      c(threads, std::vector<float>(elems));
  auto run_all = [&] {
    pool.parallel_for(threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a[t].data(), n, b[t].data(), n, 0.0f,
                    c[t].data(), n);
    });
  };
  return best_gflops(pool, n, repeats, run_all);
}

double measure_bf16_gemm_gflops(ThreadPool& pool, int n, int repeats) {
  FOLIO_CHECK_INPUT(n >= 64 && repeats >= 1, "measure_bf16_gemm_gflops: n must be at least 64 and repeats at least 1");
  FOLIO_CHECK_INPUT(bf16_gemm_supported(), "measure_bf16_gemm_gflops: this CPU has no AVX512-BF16");
  const size_t elems = static_cast<size_t>(n) * n;
  const int threads = pool.size();
  const std::vector<float> values(elems, 0.5f);
  ThreadPool one(1);
  const Bf16Activations x(values.data(), n, n, one);
  // Weight tiles of 256 rows (512 KiB at n = 1024), as matmul cuts them to stay in L2.
  constexpr int kTile = 256;
  std::vector<std::vector<uint32_t>> w;
  for (int r = 0; r < n; r += kTile) {
    w.emplace_back();
    pack_bf16_weights(values.data() + static_cast<size_t>(r) * n, std::min(kTile, n - r), n, n, 1, w.back());
  }
  std::vector<std::vector<float>> c(threads, std::vector<float>(elems));
  return best_gflops(pool, n, repeats, [&] {
    pool.parallel_for(threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (size_t i = 0; i < w.size(); ++i)
          bf16_gemm(x, w[i].data(), std::min<int64_t>(kTile, n - static_cast<int64_t>(i) * kTile), c[t].data() + i * kTile, n);
    });
  });
}

}  // namespace folio::kernels
