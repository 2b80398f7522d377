#include "kv/block_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

#include "core/huge_pages.h"

namespace folio {

namespace {
constexpr size_t kAlign = 64;
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

BlockArena::BlockArena(size_t chunk_bytes) : chunk_bytes_(round_up(chunk_bytes == 0 ? kHugePage : chunk_bytes, kHugePage)) {}

BlockArena::~BlockArena() {
  for (const Chunk& c : chunks_) ::munmap(c.base, c.size);
}

bool BlockArena::add_chunk(size_t at_least) {
  const size_t size = std::max(chunk_bytes_, round_up(at_least, kHugePage));
  Chunk c;
  c.base = reserve_huge_aligned(size);
  c.size = size;
  if (!c.base) return false;
  if (::mprotect(c.base, size, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(c.base, size);
    return false;
  }
#ifdef MADV_HUGEPAGE
  // Advice only: without THP (or when refused) the chunk stays on normal pages. Once a chunk's first
  // huge page came slowly (core/huge_pages.h), its rest and later chunks take small pages.
  if (huge_pages_) {
    ::madvise(c.base, c.size, MADV_HUGEPAGE);
    huge_pages_ = touch_pages_quickly(c.base, kHugePage);
    if (!huge_pages_) advise_small_pages(c.base + kHugePage, c.size - kHugePage);
  }
#endif
  chunks_.push_back(c);
  reserved_ += size;
  return true;
}

uint8_t* BlockArena::allocate(size_t bytes) {
  bytes = round_up(bytes == 0 ? kAlign : bytes, kAlign);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().next < bytes) {
    // The rest of the current chunk stays unused: blocks of one pool come in few sizes, and a
    // chunk holds hundreds of them.
    if (!add_chunk(bytes)) return nullptr;
  }
  Chunk& c = chunks_.back();
  uint8_t* p = c.base + c.next;
  c.next += bytes;
  used_ += bytes;
  return p;
}

}  // namespace folio
