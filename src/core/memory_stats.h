// Process memory as the operating system reports it (never estimated).
#pragma once

#include <cstddef>

namespace folio {

// Peak resident set size of this process so far (getrusage ru_maxrss).
size_t peak_rss_bytes();
// Current resident set size (/proc/self/statm).
size_t current_rss_bytes();

}  // namespace folio
