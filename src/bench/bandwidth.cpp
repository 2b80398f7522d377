#include "bench/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

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

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int repeats) {
  FOLIO_CHECK_INPUT(bytes >= (size_t{1} << 20),
                    "measure_read_bandwidth_gbs: buffer of " + std::to_string(bytes) + " bytes is too small (< 1 MiB)");
  FOLIO_CHECK_INPUT(repeats >= 1, "measure_read_bandwidth_gbs: repeats must be >= 1, got " + std::to_string(repeats));
  const int64_t words = static_cast<int64_t>(bytes / 8);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[static_cast<size_t>(words)]);
  pool.parallel_for(words, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
  });
  double best = 0;
  std::vector<uint64_t> sink(static_cast<size_t>(pool.size()), 0);
  for (int rep = 0; rep < repeats; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(
        words,
        [&](int64_t b, int64_t e) {
          // Eight independent accumulators keep the loads, not the adds, the limit.
          uint64_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          int64_t i = b;
          for (; i + 8 <= e; i += 8)
            for (int k = 0; k < 8; ++k) a[k] += buf[static_cast<size_t>(i + k)];
          for (; i < e; ++i) a[0] += buf[static_cast<size_t>(i)];
          uint64_t s = 0;
          for (uint64_t v : a) s += v;
          sink[static_cast<size_t>(b * static_cast<int64_t>(sink.size()) / words)] += s;  // keeps the loop alive
        },
        512);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(words) * 8.0 / sec / 1e9);
  }
  return best;
}

double measure_copy_bandwidth_in_child_gbs(int threads, size_t bytes, int repeats) {
  int fds[2];
  if (::pipe(fds) != 0) return 0;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    // The child: only this thread exists here, so it makes its own pool; _exit skips the parent's
    // atexit handlers and static destructors.
    ::close(fds[0]);
    double gbs = 0;
    try {
      ThreadPool pool(threads);
      gbs = measure_copy_bandwidth_gbs(pool, bytes, repeats);
    } catch (...) {
      gbs = 0;
    }
    const bool ok = ::write(fds[1], &gbs, sizeof gbs) == static_cast<ssize_t>(sizeof gbs);
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  double gbs = 0;
  if (::read(fds[0], &gbs, sizeof gbs) != static_cast<ssize_t>(sizeof gbs)) gbs = 0;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? gbs : 0;
}

}  // namespace folio::kernels
