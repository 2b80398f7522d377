// BlockArena: pieces are aligned, disjoint, zeroed and writable; chunks grow for large requests;
// counters say what was reserved and handed out. The pool built on it keeps its byte accounting.
#include "kv/block_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kv/block_pool.h"

namespace folio {
namespace {

TEST(BlockArena, PiecesAreAlignedDisjointZeroedAndWritable) {
  BlockArena arena(size_t{4} << 20);  // small chunks, so the test crosses several
  std::vector<std::pair<uint8_t*, size_t>> got;
  const size_t sizes[] = {81920, 100, 64, 1 << 20, 3000, 81920};
  for (int round = 0; round < 20; ++round)
    for (size_t n : sizes) {
      uint8_t* p = arena.allocate(n);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
      EXPECT_TRUE(std::all_of(p, p + n, [](uint8_t b) { return b == 0; }));
      std::memset(p, round + 1, n);
      got.emplace_back(p, n);
    }
  // Every piece still holds what was written into it: none overlaps another.
  for (size_t i = 0; i < got.size(); ++i) {
    const uint8_t want = static_cast<uint8_t>(i / std::size(sizes) + 1);
    EXPECT_TRUE(std::all_of(got[i].first, got[i].first + got[i].second, [&](uint8_t b) { return b == want; })) << "piece " << i;
  }
  std::sort(got.begin(), got.end());
  for (size_t i = 1; i < got.size(); ++i) EXPECT_GE(got[i].first, got[i - 1].first + got[i - 1].second);
  EXPECT_GE(arena.reserved_bytes(), arena.used_bytes());
  EXPECT_EQ(arena.reserved_bytes() % BlockArena::kHugePage, 0u);
}

TEST(BlockArena, RequestLargerThanAChunkGetsItsOwnChunk) {
  BlockArena arena(BlockArena::kHugePage);
  const size_t big = 5 * BlockArena::kHugePage + 123;
  uint8_t* p = arena.allocate(big);
  ASSERT_NE(p, nullptr);
  p[0] = 1;
  p[big - 1] = 2;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % BlockArena::kHugePage, 0u);  // a fresh chunk starts on a huge page
  EXPECT_GE(arena.reserved_bytes(), big);
  EXPECT_EQ(arena.used_bytes(), (big + 63) / 64 * 64);
}

TEST(BlockArena, PoolCountsBlockBytesNotArenaChunks) {
  // The pool's counters are the bytes of its blocks; the arena's chunk reservation never shows.
  KVBlockPool pool(KVLayout(2, 2, 8, DType::BF16), 0);
  const int64_t a = pool.allocate(1, 0, 16), b = pool.allocate(1, 1, 16);
  const size_t block = pool.block_bytes(16);
  EXPECT_EQ(pool.bytes_in_use(), 2 * block);
  EXPECT_EQ(pool.bytes_for(1, 0), block);
  uint8_t* const ak = pool.block(a).k;
  uint8_t* const bk = pool.block(b).k;
  EXPECT_NE(ak, bk);
  std::memset(ak, 7, block);
  EXPECT_NE(bk[0], 7);
  pool.release(a);
  EXPECT_EQ(pool.bytes_in_use(), block);
  // A released block's memory is reused for the next block of that size.
  const int64_t c = pool.allocate(2, 0, 16);
  EXPECT_EQ(pool.block(c).k, ak);
}

}  // namespace
}  // namespace folio
