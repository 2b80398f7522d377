#include "kv/sequence_kv.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "core/error.h"

namespace folio {
namespace {

KVLayout tiny_layout(DType dt = DType::F32) { return {2, 1, 4, dt}; }  // 2 layers, 1 head of 4

// Writes a marker (the position) into every token's K row so spans can be read back as positions.
void write_marker(SequenceKV& kv, int64_t layer, int64_t pos) {
  float v[4] = {static_cast<float>(pos), 0, 0, 0};
  std::memcpy(kv.row(layer, pos).k, v, sizeof v);
  std::memcpy(kv.row(layer, pos).v, v, sizeof v);
}

std::multiset<int64_t> visible_positions(const SequenceKV& kv, int64_t layer, int64_t pos) {
  std::vector<kernels::KVSpan> spans;
  kv.visible_spans(layer, pos, spans);
  std::multiset<int64_t> out;
  for (const auto& s : spans)
    for (int64_t t = 0; t < s.tokens; ++t) {
      float f;
      std::memcpy(&f, s.k + t * 16, sizeof f);
      out.insert(static_cast<int64_t>(f));
    }
  return out;
}

TEST(SequenceKV, RswaKeepsReferenceAndLastWindow) {
  KVBlockPool pool(tiny_layout(), 0);
  const int64_t P = 10, W = 4;
  SequenceKV kv(pool, 7, KVPolicy::parse("rswa", W), 4);
  kv.append(P, true);
  for (int64_t p = 0; p < P; ++p) write_marker(kv, 1, p);
  // Causal inside the reference.
  EXPECT_EQ(visible_positions(kv, 1, 3), (std::multiset<int64_t>{0, 1, 2, 3}));
  for (int64_t j = 0; j < 11; ++j) {
    int64_t pos = kv.append(1, false);
    EXPECT_EQ(pos, P + j);  // positions keep increasing past evictions
    write_marker(kv, 1, pos);
    std::multiset<int64_t> want;
    for (int64_t p = 0; p < P; ++p) want.insert(p);
    for (int64_t b = std::max<int64_t>(0, j - W + 1); b <= j; ++b) want.insert(P + b);  // 0 <= j - b < W
    EXPECT_EQ(visible_positions(kv, 1, pos), want) << "generated token " << j;
    EXPECT_EQ(kv.cached_tokens(), P + std::min(j + 1, W));
  }
  EXPECT_THROW(kv.append(1, true), Error);  // the reference is sealed once generation starts
}

TEST(SequenceKV, BytesAreFlatUnderRswaAndGrowUnderFull) {
  KVBlockPool pool(tiny_layout(DType::BF16), 0);
  const size_t blk = pool.block_bytes(4), ring = pool.block_bytes(8);
  SequenceKV r(pool, 1, KVPolicy::parse("rswa", 8), 4);
  SequenceKV f(pool, 2, KVPolicy::parse("full", 8), 4);
  r.append(16, true);
  f.append(16, true);
  EXPECT_EQ(r.bytes(), 2 * 4 * blk);  // 2 layers x 4 blocks of 4 rows
  size_t flat = 0;
  for (int i = 0; i < 40; ++i) {
    r.append(1, false);
    f.append(1, false);
    if (i == 8) flat = r.bytes();
    if (i >= 8) {
      EXPECT_EQ(r.bytes(), flat);
    }
  }
  EXPECT_EQ(flat, 2 * (4 * blk + ring));
  EXPECT_EQ(f.bytes(), 2 * 14 * blk);  // 16 + 40 rows, all in whole 4-row blocks
  EXPECT_EQ(pool.bytes_in_use(), r.bytes() + f.bytes());
  EXPECT_EQ(pool.bytes_for(1, 0), r.bytes() / 2);  // per-layer accounting
}

TEST(SequenceKV, ReleasesEverythingAndRefusesPastCapacity) {
  KVLayout lay = tiny_layout();
  KVBlockPool pool(lay, 2 * 2 * lay.block_bytes(KVDType::F32, KVDType::F32, 4));  // room for 8 tokens in 2 layers
  {
    SequenceKV a(pool, 1, KVPolicy::parse("full", 4), 4);
    a.append(8, true);
    EXPECT_EQ(pool.bytes_in_use(), pool.capacity_bytes());
    try {
      a.append(1, false);
      FAIL() << "expected out of memory";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::OutOfMemory);
    }
    EXPECT_EQ(a.length(), 8);  // a refused append changes nothing
  }
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  EXPECT_GT(pool.peak_bytes(), 0u);
}

TEST(SequenceKV, RejectsWindowZero) {
  EXPECT_THROW(KVPolicy::parse("rswa", 0), Error);
  EXPECT_THROW(KVPolicy::parse("sliding", 4), Error);
}

TEST(SequenceKV, IndependentSequencesHaveTheirOwnReference) {
  KVBlockPool pool(tiny_layout(), 0);
  SequenceKV a(pool, 1, KVPolicy::parse("rswa", 2), 4), b(pool, 2, KVPolicy::parse("rswa", 2), 4);
  a.append(3, true);
  b.append(9, true);
  EXPECT_EQ(a.append(1, false), 3);
  EXPECT_EQ(b.append(1, false), 9);
  EXPECT_EQ(a.reference_length(), 3);
  EXPECT_EQ(b.reference_length(), 9);
}

}  // namespace
}  // namespace folio
