#include "core/huge_pages.h"

#include <sys/mman.h>

#include <chrono>

namespace folio {

uint8_t* reserve_huge_aligned(size_t length) {
  void* area = ::mmap(nullptr, length + kHugePageBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  auto* raw = static_cast<uint8_t*>(area);
  auto* start = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
  // Give back the unaligned head and the tail past the aligned range.
  if (start > raw) ::munmap(raw, static_cast<size_t>(start - raw));
  uint8_t* const end = raw + length + kHugePageBytes;
  if (end > start + length) ::munmap(start + length, static_cast<size_t>(end - (start + length)));
  return start;
}

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
