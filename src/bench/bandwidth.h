// Measures the machine's memory copy bandwidth: the roofline that decode throughput is judged by.
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace folio::kernels {

// Copies a `bytes`-sized buffer (much larger than the caches) into another with every thread of
// `pool` copying its own slice, and returns the best of `repeats` runs in GB/s (1e9 bytes/s),
// counting bytes read plus bytes written (2 * bytes per copy). Allocates 2 * bytes of memory.
// Throws InvalidInput if bytes < 1 MiB or repeats < 1.
double measure_copy_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t{512} << 20, int repeats = 5);

// Read-only streaming bandwidth (what a GEMV over weights can at best get): every thread sums its
// slice of a `bytes`-sized buffer; best of `repeats`, in GB/s of bytes read.
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t{512} << 20, int repeats = 5);

// measure_copy_bandwidth_gbs run in a child process (fork) on a pool of its own `threads` threads,
// so its buffers never count in this process's RSS or peak RSS: for measuring bandwidth in the
// middle of a benchmark without touching its memory figures. Call it while this process's other
// threads are idle. Returns 0 if the child could not be started or failed.
double measure_copy_bandwidth_in_child_gbs(int threads, size_t bytes = size_t{512} << 20, int repeats = 5);

}  // namespace folio::kernels
