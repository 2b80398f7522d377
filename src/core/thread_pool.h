// ThreadPool: a fixed set of workers for data-parallel loops in the hot path.
//
// parallel_for splits [0, n) into one contiguous chunk per thread (the calling thread works too),
// and returns when all chunks are done. Decode issues hundreds of these per token, so workers spin
// briefly before sleeping to keep wake-up latency low. Not re-entrant: call it from one thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace folio {

class ThreadPool {
 public:
  // threads <= 0 means one per hardware core.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n). Chunks are multiples of `grain`
  // (except the last), so kernels can keep SIMD-friendly boundaries.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  // Calls fn(i) once for every i in [0, chunks), the threads taking the next chunk as they finish
  // one: a thread slowed by the machine (an interrupt, another process, the caller's serial work
  // before the call) takes fewer, so all finish together. Which thread runs a chunk varies.
  void parallel_chunks(int64_t chunks, const std::function<void(int64_t)>& fn);

  // Calls fn(thread_index) once on every thread of the pool (the caller is index 0).
  void run_on_all(const std::function<void(int)>& fn);

  static int hardware_threads();

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

}  // namespace folio
