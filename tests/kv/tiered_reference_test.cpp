// A tiered reference: complete reference segments leave the pool for a TieredStore (RAM, then a
// mapped file), and attention over them is bitwise what it is over the pool, for every policy and
// storage type; pins last only as long as a read scope; rolling drops and snapshots work on them; a store
// that cannot take a segment leaves it in the pool.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kv/file_tier.h"
#include "kv/kv_dtype.h"
#include "kv/ram_tier.h"
#include "kv/sequence_kv.h"
#include "sequence_fill.h"
#include "tier_test_util.h"

namespace folio {
namespace {


constexpr int64_t kLayers = test::kFillLayers, kHeads = test::kFillHeads, kHd = test::kFillHd;
using test::attend_at;
using test::store_token;

void fill(SequenceKV& kv, const std::vector<int64_t>& segments, int64_t generated) {
  for (int64_t n : segments) test::append_segment(kv, n);
  test::generate(kv, generated);
}

const std::vector<int64_t> kSegments = {70, 45, 100};

std::unique_ptr<TieredStore> make_store(const test::ScratchDir& dir, size_t hot, size_t cold) {
  return std::make_unique<TieredStore>(std::make_unique<RamTier>(hot), std::make_unique<FileTier>(dir.path(), cold, 4096));
}

size_t pinned(const TieredStore& store) {
  const TieredStoreStats st = store.stats();
  return st.tiers[0].pinned_blocks + st.tiers[1].pinned_blocks;
}

TEST(TieredReference, ReadsStayPinnedUntilTheirScopeEnds) {
  KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, parse_kv_types("bf16")), 0);
  test::ScratchDir dir;
  auto store = make_store(dir, size_t{1} << 30, size_t{1} << 30);
  SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 16), kDefaultBlockTokens, store.get());
  fill(kv, kSegments, 4);
  std::vector<kernels::KVSpan> spans;
  {
    const SequenceKV::ReadScope outer(kv);
    {
      SequenceKV::ReadScope moved = [&] {
        SequenceKV::ReadScope inner(kv);
        kv.visible_spans(0, kv.length() - 1, spans);
        return inner;  // the duty moves with the scope
      }();
      EXPECT_GT(pinned(*store), 0u) << "the blocks read are pinned while the scope lives";
    }
    EXPECT_EQ(pinned(*store), 0u) << "the moved scope released them when it ended";
  }
  EXPECT_EQ(pinned(*store), 0u);
}

TEST(TieredReference, AttendsExactlyLikeThePool) {
  for (const char* types : {"f32", "bf16", "q8", "q4"})
    for (const char* policy : {"rswa", "sparse", "full"}) {
      SCOPED_TRACE(std::string(types) + " " + policy);
      KVPolicy pol = KVPolicy::parse(policy, 16);
      pol.top_k = 2;
      pol.unit_tokens = 32;
      KVBlockPool pool_a(KVLayout(kLayers, kHeads, kHd, parse_kv_types(types)), 0);
      KVBlockPool pool_b(KVLayout(kLayers, kHeads, kHd, parse_kv_types(types)), 0);
      SequenceKV a(pool_a, 1, pol);
      fill(a, kSegments, 40);
      // A hot tier of a tenth of what the sequence holds: the rest goes to the file.
      test::ScratchDir dir;
      auto store = make_store(dir, a.bytes() / 10, size_t{1} << 30);
      SequenceKV b(pool_b, 1, pol, kDefaultBlockTokens, store.get());
      fill(b, kSegments, 40);
      const int64_t last = a.length() - 1;
      EXPECT_EQ(attend_at(b, last), attend_at(a, last));
      EXPECT_EQ(b.bytes() + b.offloaded_bytes(), a.bytes()) << "the same blocks, some in the store";
      EXPECT_GT(b.offloaded_bytes(), 0u);
      EXPECT_LT(b.bytes(), a.bytes());
      const TieredStoreStats st = store->stats();
      EXPECT_EQ(st.bytes(), b.offloaded_bytes());
      EXPECT_GT(st.tiers[1].bytes, 0u) << "the file tier holds what RAM could not";
      EXPECT_EQ(st.tiers[0].pinned_blocks + st.tiers[1].pinned_blocks, 0u) << "the read scopes released every pin";
      // The dense view reads the same bytes either way, and counting them pins nothing.
      EXPECT_EQ(b.visible_bytes(last), a.visible_bytes(last));
      EXPECT_EQ(store->stats().acquires, st.acquires);
      // A snapshot of offloaded segments rebuilds the same sequence (rows past a block's end are
      // whatever the pool held, so compare what attention reads).
      const size_t n = a.snapshot_segments();
      ASSERT_EQ(b.snapshot_segments(), n);
      const ReferenceSnapshot sa = a.snapshot(n), sb = b.snapshot(n);
      KVBlockPool pool_c(KVLayout(kLayers, kHeads, kHd, parse_kv_types(types)), 0);
      SequenceKV c(pool_c, 2, pol), d(pool_c, 3, pol);
      c.restore(sa, n);
      d.restore(sb, n);
      const std::vector<int64_t> rest(kSegments.begin() + static_cast<std::ptrdiff_t>(n), kSegments.end());
      fill(c, rest, 40);
      fill(d, rest, 40);
      EXPECT_EQ(attend_at(d, last), attend_at(c, last));
    }
}

TEST(TieredReference, RollingDropsLeaveTheStore) {
  KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, parse_kv_types("bf16")), 0);
  test::ScratchDir dir;
  auto store = make_store(dir, 0, size_t{1} << 30);
  {
    SequenceKV kv(pool, 1, KVPolicy::parse("rolling", 16), kDefaultBlockTokens, store.get());
    fill(kv, kSegments, 5);
    const size_t all = store->stats().bytes();
    EXPECT_EQ(all, kv.offloaded_bytes());
    kv.drop_segment(0);
    EXPECT_LT(store->stats().bytes(), all);
    EXPECT_EQ(store->stats().bytes(), kv.offloaded_bytes());
  }
  EXPECT_EQ(store->stats().bytes(), 0u) << "a sequence's end empties its part of the store";
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

TEST(TieredReference, AStoreThatIsFullLeavesTheSegmentInThePool) {
  KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, parse_kv_types("f32")), 0);
  test::ScratchDir dir;
  // Room for about one block in each tier: the first segment cannot move.
  const size_t block = pool.block_bytes(16);
  auto store = make_store(dir, block, 4096);
  SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 16), 16, store.get());
  kv.begin_segment();
  kv.append(70, true);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t p = 0; p < 70; ++p) store_token(kv, l, p);
  // Once complete, the segment's partial last block holds just its 6 rows, wherever it stays.
  const size_t closed = kv.bytes() - static_cast<size_t>(kLayers) * (pool.block_bytes(16) - pool.block_bytes(6));
  kv.begin_segment();
  test::error_of([&] { kv.append(10, true); }, Error::Kind::OutOfMemory);
  EXPECT_EQ(store->stats().bytes(), 0u);
  EXPECT_EQ(kv.offloaded_bytes(), 0u);
  EXPECT_EQ(kv.bytes(), closed);
  EXPECT_EQ(kv.bytes(), pool.bytes_in_use());
  EXPECT_EQ(kv.length(), 70);
}

}  // namespace
}  // namespace folio
