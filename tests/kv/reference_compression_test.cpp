// Reference compression (KVPolicy::keep, SnapKV): the scores, the choice of rows, and what a
// compressed SequenceKV holds and reads. The sequence tests read through the real attention kernel:
// a zero query attends uniformly, so a head's output is the mean of the value rows it reads, and
// each value row carries its position as a marker.
#include "kv/reference_compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kv/block_rows.h"
#include "kv/file_tier.h"
#include "kv/kv_dtype.h"
#include "kv/ram_tier.h"
#include "kv/sequence_kv.h"
#include "sequence_fill.h"
#include "tier_test_util.h"

namespace folio {
namespace {

TEST(ObservedQueries, KeepsTheLastCapacityQueriesOfEachLayer) {
  ObservedQueries obs(2, 3, 2);
  for (int64_t p = 0; p < 5; ++p) {
    const float q[2] = {float(p), float(-p)};
    obs.add(0, p, q);
  }
  const float q[2] = {7, 7};
  obs.add(1, 9, q);
  ASSERT_EQ(obs.count(0), 3);
  ASSERT_EQ(obs.count(1), 1);
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < 3; ++i) {
    seen.push_back(obs.position(0, i));
    EXPECT_EQ(obs.query(0, i)[0], float(obs.position(0, i)));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(obs.first_position(), 2);
}

// The mass, computed here in double from the definition: per observed query and query head, a
// softmax over the rows at or before its position, summed.
TEST(AttentionMass, EqualsTheSoftmaxSumOfEveryObservedQuery) {
  const int64_t D = 8, group = 2, kv_heads = 2, rows = 40;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  ObservedQueries obs(1, 4, kv_heads * group * D);
  std::vector<float> q(static_cast<size_t>(kv_heads * group * D));
  for (int64_t p : {30, 36, 38, 39}) {
    for (float& x : q) x = 2 * nd(rng);
    obs.add(0, p, q.data());
  }
  std::vector<float> keys(static_cast<size_t>(rows * D));
  for (float& x : keys) x = nd(rng);
  std::vector<int64_t> pos(static_cast<size_t>(rows));
  std::iota(pos.begin(), pos.end(), int64_t{0});
  const int64_t kv_head = 1;
  const std::vector<float> got = attention_mass(obs, 0, kv_head, group, D, keys.data(), pos);
  std::vector<double> want(static_cast<size_t>(rows), 0.0);
  for (int64_t i = 0; i < obs.count(0); ++i)
    for (int64_t g = 0; g < group; ++g) {
      const float* qh = obs.query(0, i) + (kv_head * group + g) * D;
      std::vector<double> e;
      for (int64_t r = 0; r <= obs.position(0, i); ++r) {
        double dot = 0;
        for (int64_t c = 0; c < D; ++c) dot += double(qh[c]) * keys[static_cast<size_t>(r * D + c)];
        e.push_back(std::exp(dot / std::sqrt(double(D))));
      }
      const double sum = std::accumulate(e.begin(), e.end(), 0.0);
      for (size_t r = 0; r < e.size(); ++r) want[r] += e[r] / sum;
    }
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_NEAR(got[static_cast<size_t>(r)], want[static_cast<size_t>(r)], 1e-5) << "row " << r;
    total += got[static_cast<size_t>(r)];
  }
  EXPECT_NEAR(total, double(obs.count(0) * group), 1e-4);  // every softmax sums to one
  EXPECT_GT(got[39], 0.f);  // seen by one query only
}

TEST(SelectRows, PoolsOverNeighboursThenPrefersTheRawScoreThenTheEarlierRow) {
  const std::vector<float> s = {0, 0, 5, 0, 0, 0, 0, 0, 0, 1};
  // Radius 1: rows 1-3 pool to 5; row 2 first (raw 5), then 1 and 3 (raw 0, earlier first).
  EXPECT_EQ(select_rows(s, 2, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(select_rows(s, 3, 1), (std::vector<int64_t>{1, 2, 3}));
  // No pooling: the two best raw scores, returned in row order.
  EXPECT_EQ(select_rows(s, 2, 0), (std::vector<int64_t>{2, 9}));
  EXPECT_EQ(select_rows(s, 10, 3).size(), 10u);
}

TEST(BlockRows, FloatRowsComeBackExactlyQuantisedOnesWithinTheirStep) {
  for (KVDType t : {KVDType::F32, KVDType::BF16, KVDType::Q8, KVDType::Q4}) {
    const KVLayout lay(1, 2, 32, KVTypes::uniform(t));  // value groups of 64 span both heads
    KVBlockPool pool(lay, 0);
    const int64_t rows = 10, n = 2 * rows * 32;
    const KVBlock& b = pool.block(pool.allocate(1, 0, rows));
    std::mt19937 rng(9);
    std::normal_distribution<float> nd;
    std::vector<float> k(static_cast<size_t>(n)), v(k.size()), k2(k.size()), v2(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = kernels::kv_quantized(t) ? nd(rng) : static_cast<float>(i % 17) - 8;  // exact in bf16
      v[i] = kernels::kv_quantized(t) ? nd(rng) : static_cast<float>(i % 13) * 0.5f;
    }
    write_block_rows(lay, k.data(), v.data(), rows, b);
    read_block_rows(lay, b, rows, k2.data(), v2.data());
    const float tol = t == KVDType::Q4 ? 0.6f : t == KVDType::Q8 ? 0.04f : 0.f;
    for (size_t i = 0; i < k.size(); ++i) {
      ASSERT_NEAR(k2[i], k[i], tol) << kernels::kv_dtype_name(t) << " key " << i;
      ASSERT_NEAR(v2[i], v[i], tol) << kernels::kv_dtype_name(t) << " value " << i;
    }
  }
}

// One layer, two KV heads of 4 channels, blocks of 4 rows. Segment A: positions 0-7; segment B (the
// prompt): 8-9, observed. Head 0's observed queries point at row 5 of A, head 1's at row 2.
struct Fixture {
  static constexpr int64_t kD = 4, kHeads = 2;
  KVBlockPool pool;
  SequenceKV kv;
  Fixture(KVDType t, double keep, bool observe = true, int64_t block = 4)
      : pool(KVLayout(1, kHeads, kD, KVTypes::uniform(t)), 0), kv(pool, 1, policy(keep), block) {
    for (int64_t seg : {8, 2}) {
      kv.begin_segment();
      const int64_t first = kv.append(seg, true);
      for (int64_t p = first; p < first + seg; ++p) {
        float k[kHeads * kD] = {}, v[kHeads * kD] = {};
        if (p == 5) k[0] = 1;       // head 0, channel 0
        if (p == 2) k[kD + 1] = 1;  // head 1, channel 1
        v[0] = v[kD] = static_cast<float>(p);
        kv.store(0, p, k, v);
        if (observe && p >= 8) {
          float q[kHeads * kD] = {};
          q[0] = 10;       // head 0 looks along channel 0
          q[kD + 1] = 10;  // head 1 along channel 1
          kv.observe_query(0, p, q, kHeads);
        }
      }
    }
  }
  static KVPolicy policy(double keep) {
    KVPolicy p;
    p.keep = keep;
    return p;
  }
  // The first generated token (position 10, value marker 10), then each head's mean value marker
  // under a uniform (zero) query: the mean of the positions it reads.
  std::vector<float> generate_and_read() {
    const int64_t pos = kv.append(1, false);
    float k[kHeads * kD] = {}, v[kHeads * kD] = {};
    v[0] = v[kD] = static_cast<float>(pos);
    kv.store(0, pos, k, v);
    std::vector<kernels::KVSpan> spans;
    kv.visible_spans(0, pos, spans);
    std::vector<float> q(kHeads * kD, 0.f), out(kHeads * kD), scratch(4096);
    kernels::attend(q.data(), spans, {kHeads, kHeads, kD, 0.5f}, out.data(), 0, kHeads, scratch.data());
    return {out[0], out[kD]};
  }
};

TEST(ReferenceCompression, KeepsTheObservedRowsBestPerHeadAndReadsNothingElse) {
  for (KVDType t : {KVDType::F32, KVDType::BF16, KVDType::Q8, KVDType::Q4}) {
    SCOPED_TRACE(kernels::kv_dtype_name(t));
    Fixture f(t, 0.25);
    const std::vector<float> mean = f.generate_and_read();
    // A keeps ceil(8 / 4) = 2 rows per head: head 0 rows 5 and its earliest pooled neighbour 2;
    // head 1 row 2 and its earliest pooled neighbour 0. B (observed) and the window stay.
    const float tol = t == KVDType::Q4 ? 0.3f : t == KVDType::Q8 ? 0.05f : 1e-5f;
    EXPECT_NEAR(mean[0], (2 + 5 + 8 + 9 + 10) / 5.f, tol);
    EXPECT_NEAR(mean[1], (0 + 2 + 8 + 9 + 10) / 5.f, tol);
    EXPECT_EQ(f.kv.dropped_rows(), 6);
    EXPECT_EQ(f.kv.cached_tokens(), 2 + 2 + 1);
  }
}

TEST(ReferenceCompression, DroppedRowsGiveTheirBytesBackToThePool) {
  Fixture f(KVDType::F32, 0.25);
  const KVTypes& t = f.pool.layout().types;
  const size_t before = f.kv.bytes();
  ASSERT_EQ(before, f.pool.bytes_in_use());
  f.generate_and_read();
  // A's two blocks of 4 rows became one block of its 2 rows; B's block of 4 rows shrank to its 2
  // when B closed; the window's ring block came in.
  const size_t ring = f.pool.block_bytes(128, t.win_k, t.win_v);
  EXPECT_EQ(f.kv.bytes(), before - 3 * f.pool.block_bytes(4, t.ref_k, t.ref_v) + 2 * f.pool.block_bytes(2, t.ref_k, t.ref_v) + ring);
  EXPECT_EQ(f.kv.bytes(), f.pool.bytes_in_use());
}

TEST(ReferenceCompression, KeepOneOrNothingObservedLeavesTheReferenceWhole) {
  for (const bool observe : {true, false}) {
    Fixture whole(KVDType::F32, observe ? 1.0 : 0.25, observe);
    const std::vector<float> mean = whole.generate_and_read();
    EXPECT_FLOAT_EQ(mean[0], 5.f);  // positions 0-10, uniformly
    EXPECT_FLOAT_EQ(mean[1], 5.f);
    EXPECT_EQ(whole.kv.dropped_rows(), 0);
  }
}

TEST(ReferenceCompression, CompressedSegmentsAreNotSnapshotted) {
  Fixture f(KVDType::F32, 0.25);
  EXPECT_EQ(f.kv.snapshot_segments(), 2u);
  f.generate_and_read();
  EXPECT_EQ(f.kv.snapshot_segments(), 0u);
}

TEST(ReferenceCompression, SparseSelectsAmongTheKeptRows) {
  KVPolicy p = Fixture::policy(0.25);
  p.kind = KVPolicyKind::Sparse;
  p.top_k = 1;
  p.unit_tokens = 1;
  p.observe = 2;  // the prompt only
  KVBlockPool pool(KVLayout(1, 1, 4, KVTypes::uniform(KVDType::F32)), 0);
  SequenceKV kv(pool, 1, p, 4);
  for (int64_t seg : {16, 2}) {
    kv.begin_segment();
    const int64_t first = kv.append(seg, true);
    for (int64_t pos = first; pos < first + seg; ++pos) {
      float k[4] = {static_cast<float>(pos), 0, 0, 0}, v[4] = {static_cast<float>(pos), 0, 0, 0};
      kv.store(0, pos, k, v);
      kv.observe_query(0, pos, k, 1);
    }
  }
  const int64_t pos = kv.append(1, false);
  const float k[4] = {0, 0, 0, 0};
  kv.store(0, pos, k, k);
  EXPECT_EQ(kv.dropped_rows(), 12);  // 16 -> 4
  const float q[4] = {1, 0, 0, 0};
  std::vector<kernels::KVSpan> spans;
  kv.query_spans(0, pos, 0, q, 1, spans);
  int64_t rows = 0;
  for (const kernels::KVSpan& s : spans) rows += s.tokens;
  EXPECT_LE(rows, 4 + 2 + 1);  // at most the kept rows, the prompt and the window
  EXPECT_GE(rows, 1 + 1);
}

// A tiered reference (pages in a RAM / file store, not the pool) is compressed the same: attention
// afterwards is bitwise what it is for the same sequence kept in the pool, the store holds only the
// kept rows, and the pool only the window.
TEST(ReferenceCompression, AnOffloadedReferenceCompressesAsOneInThePool) {
  using namespace test;
  for (const char* types : {"bf16", "q8"}) {
    SCOPED_TRACE(types);
    KVPolicy p = KVPolicy::parse("rswa", 16);
    p.keep = 0.25;
    p.observe = 8;
    KVBlockPool pool(KVLayout(kFillLayers, kFillHeads, kFillHd, parse_kv_types(types)), 0);
    ScratchDir dir;
    TieredStore store(std::make_unique<RamTier>(size_t{1} << 30), std::make_unique<FileTier>(dir.path(), size_t{1} << 30, 4096));
    SequenceKV in_pool(pool, 1, p), offloaded(pool, 2, p, kDefaultBlockTokens, &store);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    std::vector<float> q(kFillRow);
    for (SequenceKV* kv : {&in_pool, &offloaded}) {
      for (int64_t n : {70, 45, 12}) append_segment(*kv, n);
      for (int64_t l = 0; l < kFillLayers; ++l)
        for (int64_t pos = kv->length() - 8; pos < kv->length(); ++pos) {
          rng.seed(static_cast<uint32_t>(pos * 7 + l));
          for (float& x : q) x = nd(rng);
          kv->observe_query(l, pos, q.data(), kFillHeads);
        }
    }
    const size_t stored_before = offloaded.offloaded_bytes();
    generate(in_pool, 3);
    generate(offloaded, 3);
    EXPECT_EQ(in_pool.dropped_rows(), offloaded.dropped_rows());
    EXPECT_EQ(in_pool.dropped_rows(), (70 - 18) + (45 - 12) + (12 - 8 - 1));  // 12: 4 open rows, keep 1, 8 observed
    EXPECT_EQ(attend_at(in_pool, in_pool.length() - 1), attend_at(offloaded, offloaded.length() - 1));
    EXPECT_LT(offloaded.offloaded_bytes(), stored_before / 2);
    EXPECT_EQ(offloaded.bytes() + offloaded.offloaded_bytes(), in_pool.bytes());  // the same blocks, the reference in the store
  }
}

TEST(ReferenceCompression, RefusesKeepOutsideItsRangeAndPoliciesWithoutAPinnedReference) {
  for (double keep : {0.0, -0.5, 1.5}) {
    KVPolicy p;
    p.keep = keep;
    EXPECT_THROW(p.rules().validate(p), Error) << keep;
  }
  for (const char* name : {"full", "rolling"}) {
    KVPolicy p = KVPolicy::parse(name, 128);
    p.keep = 0.5;
    try {
      p.rules().validate(p);
      ADD_FAILURE() << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find("rswa or sparse"), std::string::npos) << e.what();
    }
  }
  KVPolicy p;
  p.keep = 0.5;
  p.observe = 0;
  EXPECT_THROW(p.rules().validate(p), Error);
}

}  // namespace
}  // namespace folio
