// Whether transparent huge pages come cheaply on this machine, judged by touching them.
//
// Huge pages shorten the page walks of long streams (weights, KV), but under some hypervisors the
// host backs each huge page of a guest on its first touch, piece by piece: on the Intel Xeon VM a
// 2 GiB region advised for huge pages took 16 s to touch after a while idle, against 1.2 s in small
// pages, and decode ran no faster on them (docs/measurements.md, "Weights read into huge pages").
// So the regions advised for huge pages touch a first part and fall back to small pages for the
// rest where it came slowly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace folio {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `length` bytes (a whole number of pages) of address space starting on a 2 MiB boundary, so the
// kernel can back what is put there with huge pages from its first byte: reserved (no access, no
// memory) for the caller to open up (mprotect) or map over (MAP_FIXED), and to unmap as
// munmap(start, length). nullptr, with errno set, when there is none.
uint8_t* reserve_huge_aligned(size_t length);

// Writes a zero into every 4 KiB page of [p, p + n) (memory that reads as zero already: fresh
// anonymous memory, or memory about to be overwritten) and returns whether the n bytes came at
// kCheapPagesBytesPerSecond or faster. Where the pages were present already it is only a few stores.
bool touch_pages_quickly(uint8_t* p, size_t n);
inline constexpr double kCheapPagesBytesPerSecond = 1e9;  // zeroing memory runs at several GB/s

// Advises [p, p + n) for small pages (undoes MADV_HUGEPAGE for what is not yet touched). Advisory:
// failures are ignored.
void advise_small_pages(uint8_t* p, size_t n);

}  // namespace folio
