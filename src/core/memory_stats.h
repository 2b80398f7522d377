// Process memory as the operating system reports it (never estimated).
#pragma once

#include <cstddef>

namespace folio {

// Peak resident set size of this process so far (getrusage ru_maxrss).
size_t peak_rss_bytes();
// Current resident set size (/proc/self/statm).
size_t current_rss_bytes();
// What the kernel can hand out without swapping, page cache included (MemAvailable of
// /proc/meminfo), or SIZE_MAX when it cannot be read.
size_t available_memory_bytes();

}  // namespace folio
