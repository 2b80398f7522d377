#include "kernels/cpu/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"

namespace folio::kernels {

double measure_copy_bandwidth_gbs(ThreadPool& pool, size_t bytes, int repeats) {
  FOLIO_CHECK_INPUT(bytes >= (size_t{1} << 20),
                    "measure_copy_bandwidth_gbs: buffer of " + std::to_string(bytes) + " bytes is too small (< 1 MiB)");
  FOLIO_CHECK_INPUT(repeats >= 1, "measure_copy_bandwidth_gbs: repeats must be >= 1, got " + std::to_string(repeats));
  // Slices are whole 4 KiB pages so no two threads share a page or a cache line.
  constexpr int64_t kPage = 4096;
  const int64_t pages = static_cast<int64_t>(bytes / kPage);
  const size_t used = static_cast<size_t>(pages) * kPage;
  std::unique_ptr<char[]> src(new char[used]);
  std::unique_ptr<char[]> dst(new char[used]);

  // First touch from the threads that will copy, so pages are mapped (and NUMA-local) before timing.
  pool.parallel_for(pages, [&](int64_t b, int64_t e) {
    std::memset(src.get() + b * kPage, 1, static_cast<size_t>(e - b) * kPage);
    std::memset(dst.get() + b * kPage, 0, static_cast<size_t>(e - b) * kPage);
  });

  double best = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(pages, [&](int64_t b, int64_t e) {
      std::memcpy(dst.get() + b * kPage, src.get() + b * kPage, static_cast<size_t>(e - b) * kPage);
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(used) / s / 1e9);
  }
  return best;
}

}  // namespace folio::kernels
