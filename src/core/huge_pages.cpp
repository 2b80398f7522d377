#include "core/huge_pages.h"

#include <sys/mman.h>

#include <chrono>

namespace folio {

bool touch_pages_quickly(uint8_t* p, size_t n) {
  const auto begin = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; i += 4096) p[i] = 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return static_cast<double>(n) >= kCheapPagesBytesPerSecond * seconds;
}

void advise_small_pages(uint8_t* p, size_t n) {
#ifdef MADV_NOHUGEPAGE
  if (n > 0) ::madvise(p, n, MADV_NOHUGEPAGE);
#else
  (void)p, (void)n;
#endif
}

}  // namespace folio
