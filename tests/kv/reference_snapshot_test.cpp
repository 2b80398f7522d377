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
#include "kv/sequence_kv.h"

namespace folio {
namespace {

using kernels::KVSpan;

constexpr int64_t kLayers = 2, kHeads = 4, kHd = 32, kRow = kHeads * kHd;

// The K and V rows of the token at `pos` in `layer`: a pure function, so two sequences can be
// given the same tokens.
void store_token(SequenceKV& kv, int64_t layer, int64_t pos) {
  std::mt19937 rng(static_cast<uint32_t>(pos * kLayers + layer + 1));
  std::normal_distribution<float> nd;
  std::vector<float> k(kRow), v(kRow);
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  kv.store(layer, pos, k.data(), v.data());
}

void append_segment(SequenceKV& kv, int64_t n, std::vector<int64_t> unit_offsets = {}) {
  kv.begin_segment();
  const int64_t first = kv.length();
  for (int64_t u : unit_offsets) kv.begin_unit(first + u);
  kv.append(n, true);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t p = first; p < first + n; ++p) store_token(kv, l, p);
}

void generate(SequenceKV& kv, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = kv.append(1, false);
    for (int64_t l = 0; l < kLayers; ++l) store_token(kv, l, pos);
  }
}

// Attention of a fixed query at `pos` over what each layer and head reads.
std::vector<float> attend_at(const SequenceKV& kv, int64_t pos) {
  std::mt19937 rng(77);
  std::normal_distribution<float> nd;
  std::vector<float> q(kRow);
  for (auto& x : q) x = nd(rng);
  std::vector<float> out(kLayers * kRow), scratch(4096);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t h = 0; h < kHeads; ++h) {
      std::vector<KVSpan> spans;
      kv.query_spans(l, pos, h, q.data() + h * kHd, 1, spans);
      kernels::attend(q.data(), spans, {kHeads, kHeads, kHd, 1.f / std::sqrt(float(kHd))}, out.data() + l * kRow, h, h + 1,
                      scratch.data());
    }
  return out;
}

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
          SequenceKV kv(pool, 1, pol);
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
        const size_t worst = SequenceKV::worst_case_bytes(pool, pol, 16, kSegments, gen);
        EXPECT_GE(worst, peak);
        if (!types_of(types).any_quantized()) EXPECT_EQ(worst, peak);
        else EXPECT_LT(worst, peak * 5 / 4) << "an upper bound, but not a wild one";
      }
}

}  // namespace
}  // namespace folio
