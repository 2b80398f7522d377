#include "kernels/cpu/compute_peak.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"

namespace folio::kernels {

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
  run_all();  // warm-up: pages touched, BLAS buffers allocated
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run_all();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) * threads / s / 1e9);
  }
  return best;
}

}  // namespace folio::kernels
