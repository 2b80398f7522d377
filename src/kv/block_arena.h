// BlockArena: where the KV pool's block memory comes from.
//
// Blocks are carved one after another out of large chunks reserved with mmap, 2 MiB aligned and
// marked for transparent huge pages (MADV_HUGEPAGE) while they come cheaply (core/huge_pages.h: a
// chunk's first huge page is touched when the chunk is reserved; once one came slowly, the rest
// and later chunks take small pages). Why not one malloc per block:
//   - attention reads a sequence's reference block by block, 4 KiB per head of a 16-row bf16 block:
//     with 4 KiB pages nearly every run of rows costs a TLB miss and starts a new page for the
//     hardware prefetcher; on huge pages a whole layer's blocks are a few TLB entries;
//   - blocks allocated in a row (a prefill) lie next to each other instead of between allocator
//     headers.
// Memory is reserved, not committed: untouched parts of a chunk cost no RSS (its first 2 MiB are
// touched as the probe). A piece is never given back on its own (the pool recycles blocks through
// its free lists); chunks are unmapped when the arena is destroyed. Where huge pages are off or the
// kernel refuses, the same code runs on normal pages. Not thread-safe (the pool's callers serialise
// allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/huge_pages.h"

namespace folio {

class BlockArena {
 public:
  // Chunks are at least `chunk_bytes` (rounded up to 2 MiB) of address space each.
  explicit BlockArena(size_t chunk_bytes = size_t{64} << 20);
  ~BlockArena();
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  // `bytes` of 64-byte aligned memory, zero-filled on first use; nullptr if the system refuses.
  uint8_t* allocate(size_t bytes);

  // Address space reserved so far (chunks), and the bytes handed out from it.
  size_t reserved_bytes() const { return reserved_; }
  size_t used_bytes() const { return used_; }

  static constexpr size_t kHugePage = kHugePageBytes;

 private:
  struct Chunk {
    uint8_t* base = nullptr;  // 2 MiB aligned start (reserve_huge_aligned)
    size_t size = 0, next = 0;
  };
  bool add_chunk(size_t at_least);

  size_t chunk_bytes_;
  std::vector<Chunk> chunks_;
  size_t reserved_ = 0, used_ = 0;
  bool huge_pages_ = true;  // false once a chunk's first huge page came slowly
};

}  // namespace folio
