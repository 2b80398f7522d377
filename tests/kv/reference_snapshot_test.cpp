// Reference reuse at the KV level: a sequence rebuilt from a snapshot of another's reference
// segments holds the same bytes, so attention over it equals attention over the original, for every
// storage type and policy; and worst_case_bytes bounds what a sequence really takes from the pool.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kv/kv_dtype.h"
#include "kv/file_tier.h"
#include "kv/ram_tier.h"
#include "kv/sequence_kv.h"
#include "kv/tiered_store.h"
#include "sequence_fill.h"
#include "tier_test_util.h"

namespace folio {
namespace {


constexpr int64_t kLayers = test::kFillLayers, kHeads = test::kFillHeads, kHd = test::kFillHd;
using test::append_segment;
using test::attend_at;
using test::generate;

// "mixed": q8 keys, q4 values, f16 window.
KVTypes types_of(const std::string& name) {
  return name == "mixed" ? parse_kv_types("f32", "q8", "q4", "f16") : parse_kv_types(name);
}

const std::vector<int64_t> kSegments = {70, 45, 100};  // not multiples of a key group or a block

TEST(ReferenceSnapshot, RestoredSequenceAttendsExactlyLikeTheOriginal) {
  for (const char* types : {"f32", "bf16", "q8", "q4", "mixed"})
    for (const char* policy : {"rswa", "sparse", "full"}) {
      SCOPED_TRACE(std::string(types) + " " + policy);
      KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, types_of(types)), 0);
      KVPolicy pol = KVPolicy::parse(policy, 16);
      pol.top_k = 2;
      pol.unit_tokens = 32;
      auto a = std::make_unique<SequenceKV>(pool, 1, pol);
      append_segment(*a, kSegments[0]);
      append_segment(*a, kSegments[1], {20});
      append_segment(*a, kSegments[2]);
      generate(*a, 40);
      const size_t n = a->snapshot_segments();
      // A quantised reference under `full` keeps its last segment open for the output.
      const bool last_shared = std::string(policy) == "full" && types_of(types).any_quantized();
      ASSERT_EQ(n, last_shared ? 2u : 3u);
      const ReferenceSnapshot snap = a->snapshot(n);
      EXPECT_EQ(snap.tokens(n), last_shared ? 115 : 215);
      const int64_t last = a->length() - 1;
      const std::vector<float> want = attend_at(*a, last);
      const size_t bytes_a = a->bytes();
      a.reset();  // the snapshot lives outside the pool
      EXPECT_EQ(pool.bytes_in_use(), 0u);

      SequenceKV b(pool, 2, pol);
      b.restore(snap, n);
      EXPECT_EQ(b.length(), snap.tokens(n));
      EXPECT_EQ(b.segment_count(), n);
      for (size_t i = n; i < kSegments.size(); ++i) append_segment(b, kSegments[i]);
      generate(b, 40);
      EXPECT_EQ(b.length() - 1, last);
      EXPECT_EQ(b.bytes(), bytes_a);
      const std::vector<float> got = attend_at(b, last);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "output " << i;
    }
}

TEST(ReferenceSnapshot, PrefixOfTheSegments) {
  KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, parse_kv_types("q8")), 0);
  KVPolicy pol = KVPolicy::parse("rswa", 16);
  SequenceKV a(pool, 1, pol);
  for (int64_t n : kSegments) append_segment(a, n);
  // The open segment's last group is still staged: only the closed ones can be copied yet.
  EXPECT_EQ(a.snapshot_segments(), 2u);
  EXPECT_THROW(a.snapshot(3), Error);
  generate(a, 1);
  EXPECT_EQ(a.snapshot_segments(), 3u);
  const ReferenceSnapshot snap = a.snapshot(3);
  // Another document that shares only the first page.
  SequenceKV b(pool, 2, pol), c(pool, 3, pol);
  b.restore(snap, 1);
  append_segment(b, 30);
  generate(b, 20);
  append_segment(c, kSegments[0]);
  append_segment(c, 30);
  generate(c, 20);
  EXPECT_EQ(attend_at(b, b.length() - 1), attend_at(c, c.length() - 1));
}

// Float blocks are long (kDefaultBlockTokens rows): a segment holds whole blocks while it fills and
// gives back its partial last block when the next segment (or generation) starts, the rows and what
// attention reads over them unchanged.
TEST(ReferenceSnapshot, AClosedFloatSegmentHoldsJustItsRows) {
  for (const char* types : {"f32", "bf16"})
    for (int64_t bt : {int64_t{16}, kDefaultBlockTokens}) {
      SCOPED_TRACE(std::string(types) + " blocks of " + std::to_string(bt));
      KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, types_of(types)), 0);
      const KVPolicy pol = KVPolicy::parse("rswa", 16);
      SequenceKV a(pool, 1, pol, bt);
      append_segment(a, kSegments[0]);
      const auto whole = [&](int64_t rows) { return (rows + bt - 1) / bt * pool.block_bytes(bt); };
      EXPECT_EQ(a.bytes(), kLayers * whole(kSegments[0]));
      const std::vector<float> open = attend_at(a, kSegments[0] - 1);
      append_segment(a, kSegments[1]);
      const auto closed = [&](int64_t rows) { return rows / bt * pool.block_bytes(bt) + pool.block_bytes(rows % bt); };
      EXPECT_EQ(a.bytes(), kLayers * (closed(kSegments[0]) + whole(kSegments[1])));
      EXPECT_EQ(a.bytes(), pool.bytes_in_use());
      EXPECT_EQ(attend_at(a, kSegments[0] - 1), open);
      generate(a, 3);
      EXPECT_EQ(a.bytes(), kLayers * (closed(kSegments[0]) + closed(kSegments[1]) + pool.block_bytes(16)));
      EXPECT_EQ(a.bytes(), pool.bytes_in_use());
    }
}

// Under `full` the output extends the last restored segment: a trimmed last block is taken back to
// full size first, so the sequence is the one a fresh prefill would have built.
TEST(ReferenceSnapshot, OutputAfterARestoredTrimmedSegmentRegrowsItsBlock) {
  for (const char* types : {"f32", "bf16"})
    for (int64_t bt : {int64_t{16}, kDefaultBlockTokens}) {
      SCOPED_TRACE(std::string(types) + " blocks of " + std::to_string(bt));
      KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, types_of(types)), 0);
      const KVPolicy pol = KVPolicy::parse("full", 16);
      SequenceKV a(pool, 1, pol, bt);
      append_segment(a, kSegments[0]);
      append_segment(a, kSegments[1]);  // closes (trims) the first
      const ReferenceSnapshot snap = a.snapshot(1);
      ASSERT_LT(snap.segments[0].layers[0].back().tokens, bt) << "the snapshot holds the trimmed block";
      SequenceKV b(pool, 2, pol, bt), c(pool, 3, pol, bt);
      b.restore(snap, 1);
      generate(b, 150);
      append_segment(c, kSegments[0]);
      generate(c, 150);
      EXPECT_EQ(b.bytes(), c.bytes());
      EXPECT_EQ(attend_at(b, b.length() - 1), attend_at(c, c.length() - 1));
      EXPECT_EQ(attend_at(b, kSegments[0] + 10), attend_at(c, kSegments[0] + 10));
    }
}

// A snapshot of a segment still being filled keeps its last block whole: output under `full` that
// fits in that block needs no more pool bytes (a whole block reserved for a regrow would be refused).
TEST(ReferenceSnapshot, OutputIntoAWholeRestoredBlockNeedsNoMoreBytes) {
  const KVLayout layout(kLayers, kHeads, kHd, types_of("bf16"));
  const KVPolicy pol = KVPolicy::parse("full", 16);
  KVBlockPool source(layout, 0);
  SequenceKV a(source, 1, pol);
  append_segment(a, 50);  // open: its block keeps all kDefaultBlockTokens rows
  const ReferenceSnapshot snap = a.snapshot(1);
  ASSERT_EQ(snap.segments[0].layers[0].back().tokens, kDefaultBlockTokens);
  KVBlockPool exact(layout, a.bytes());  // just what the restored blocks take
  SequenceKV b(exact, 2, pol);
  b.restore(snap, 1);
  generate(b, 20);  // 70 rows: still inside the block
  generate(a, 20);
  EXPECT_EQ(exact.bytes_in_use(), a.bytes());
  EXPECT_EQ(attend_at(b, b.length() - 1), attend_at(a, a.length() - 1));
}

TEST(ReferenceSnapshot, RefusesWhatItCannotRebuild) {
  KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, parse_kv_types("f32")), 0);
  SequenceKV a(pool, 1, KVPolicy::parse("rswa", 16));
  append_segment(a, 50);
  generate(a, 1);
  const ReferenceSnapshot snap = a.snapshot(1);
  // Not empty.
  EXPECT_THROW(a.restore(snap, 1), Error);
  // Another storage type or block size.
  KVBlockPool other(KVLayout(kLayers, kHeads, kHd, parse_kv_types("bf16")), 0);
  SequenceKV b(other, 2, KVPolicy::parse("rswa", 16));
  EXPECT_THROW(b.restore(snap, 1), Error);
  SequenceKV c(pool, 3, KVPolicy::parse("rswa", 16), 8);
  EXPECT_THROW(c.restore(snap, 1), Error);
  // A pool too small: OutOfMemory, and nothing taken.
  KVBlockPool small(KVLayout(kLayers, kHeads, kHd, parse_kv_types("f32")), a.bytes() / 2);
  SequenceKV d(small, 4, KVPolicy::parse("rswa", 16));
  try {
    d.restore(snap, 1);
    FAIL() << "expected OutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::OutOfMemory);
  }
  EXPECT_EQ(small.bytes_in_use(), 0u);
  EXPECT_EQ(d.length(), 0);
}

// worst_case_bytes is what admission reserves: never below the pool's peak for the sequence, and
// exact for float storage.
TEST(ReferenceSnapshot, WorstCaseBytesBoundsThePoolPeak) {
  for (const char* types : {"f32", "bf16", "q8", "q4", "mixed"})
    for (const char* policy : {"rswa", "full"})
      for (int64_t gen : {0, 1, 15, 16, 100}) {
        SCOPED_TRACE(std::string(types) + " " + policy + " generated " + std::to_string(gen));
        KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, types_of(types)), 0);
        const KVPolicy pol = KVPolicy::parse(policy, 16);
        size_t peak = 0;
        {
          SequenceKV kv(pool, 1, pol, 16);
          for (int64_t n : kSegments) {
            append_segment(kv, n);
            peak = std::max(peak, kv.bytes());
          }
          for (int64_t i = 0; i < gen; ++i) {
            generate(kv, 1);
            peak = std::max(peak, kv.bytes());
          }
        }
        peak = std::max(peak, pool.peak_bytes());
        const size_t worst = KVFootprint::worst_case_bytes(pool, pol, 16, kSegments, gen);
        EXPECT_GE(worst, peak);
        if (!types_of(types).any_quantized()) EXPECT_EQ(worst, peak);
        else EXPECT_LT(worst, peak * 5 / 4) << "an upper bound, but not a wild one";
      }
}

// With the reference offloaded to a store, the pool holds only the segment being filled and the
// window: what admission reserves then (worst_case_bytes with reference_offloaded) still bounds the
// pool's peak, exactly for float storage, and is below the in-pool worst case.
TEST(ReferenceSnapshot, OffloadedWorstCaseBytesBoundsThePoolPeak) {
  for (const char* types : {"f32", "bf16", "q8", "q4"})
    for (const char* policy : {"rswa", "full"})
      for (int64_t gen : {0, 1, 16, 100}) {
        SCOPED_TRACE(std::string(types) + " " + policy + " generated " + std::to_string(gen));
        KVBlockPool pool(KVLayout(kLayers, kHeads, kHd, types_of(types)), 0);
        test::ScratchDir dir;
        TieredStore store(std::make_unique<RamTier>(size_t{1} << 30), std::make_unique<FileTier>(dir.path(), size_t{1} << 30, 4096));
        const KVPolicy pol = KVPolicy::parse(policy, 16);
        {
          SequenceKV kv(pool, 1, pol, 16, &store);
          for (int64_t n : kSegments) append_segment(kv, n);
          generate(kv, gen);
          EXPECT_GT(kv.offloaded_bytes(), 0u);
        }
        const size_t worst = KVFootprint::worst_case_bytes(pool, pol, 16, kSegments, gen, true);
        EXPECT_GE(worst, pool.peak_bytes());
        if (!types_of(types).any_quantized()) {
          EXPECT_EQ(worst, pool.peak_bytes());
        }
        EXPECT_LT(worst, KVFootprint::worst_case_bytes(pool, pol, 16, kSegments, gen));
      }
}

}  // namespace
}  // namespace folio
