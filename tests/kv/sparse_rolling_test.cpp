// The sparse and rolling policies at the KV level: what a query reads, what it costs, what stays.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kv/kv_dtype.h"
#include "kv/sequence_kv.h"

namespace folio {
namespace {

using kernels::KVSpan;
constexpr int64_t kHeads = 2, kHd = 16, kRow = kHeads * kHd;

// K rows random (or given), V rows carry the position in channel 0 of every head.
void store_token(SequenceKV& kv, int64_t pos, std::mt19937& rng, const float* k_override = nullptr) {
  std::normal_distribution<float> nd;
  std::vector<float> k(kRow), v(kRow, 0.f);
  for (auto& x : k) x = nd(rng);
  if (k_override) std::memcpy(k.data(), k_override, sizeof(float) * kRow);
  for (int64_t h = 0; h < kHeads; ++h) v[h * kHd] = static_cast<float>(pos);
  kv.store(0, pos, k.data(), v.data());
}

std::multiset<int64_t> positions(const std::vector<KVSpan>& spans, int64_t head = 0) {
  std::multiset<int64_t> out;
  std::vector<float> row(kHd);
  for (const KVSpan& s : spans)
    for (int64_t t = 0; t < s.tokens; ++t) {
      const uint8_t* v = s.v + head * s.v_head_stride + t * kernels::kv_row_bytes(s.v_type, kHd);
      if (kernels::kv_quantized(s.v_type))  // value groups span the two heads: one group per row
        kernels::dequantize_value_group(s.v_type, v, s.v_params + t * s.v_param_stride, kHd, row.data());
      else
        convert_to_f32(kernels::kv_float_dtype(s.v_type), v, row.data(), kHd);
      out.insert(std::lround(row[0]));
    }
  return out;
}

// A reference of `pages` segments of `len` tokens, then `gen` generated tokens.
void fill(SequenceKV& kv, int64_t pages, int64_t len, int64_t gen, std::mt19937& rng) {
  for (int64_t p = 0; p < pages; ++p) {
    kv.begin_segment();
    const int64_t first = kv.append(len, true);
    for (int64_t i = 0; i < len; ++i) store_token(kv, first + i, rng);
  }
  for (int64_t j = 0; j < gen; ++j) store_token(kv, kv.append(1, false), rng);
}

KVPolicy sparse(int64_t top_k, int64_t window = 16) {
  KVPolicy p = KVPolicy::parse("sparse", window);
  p.top_k = top_k;
  return p;
}

// top-k = every unit reads exactly the dense rswa spans, in the same order, so attention is
// bitwise the same.
TEST(SparsePolicy, TopKAllEqualsDenseExactly) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd), 0);
  SequenceKV kv(pool, 1, sparse(1000));
  std::mt19937 rng(1);
  fill(kv, 5, 150, 40, rng);
  const int64_t pos = kv.length() - 1;
  std::vector<KVSpan> dense, sel;
  kv.visible_spans(0, pos, dense);
  std::vector<float> q(kRow);
  for (auto& x : q) x = std::normal_distribution<float>()(rng);
  for (int64_t h = 0; h < kHeads; ++h) {
    sel.clear();
    kv.query_spans(0, pos, h, q.data() + h * kHd, 1, sel);
    ASSERT_EQ(sel.size(), dense.size());
    for (size_t i = 0; i < sel.size(); ++i) {
      EXPECT_EQ(sel[i].k, dense[i].k);
      EXPECT_EQ(sel[i].tokens, dense[i].tokens);
    }
    std::vector<float> a(kRow), b(kRow), scratch(2000);
    const kernels::AttentionShape shape{kHeads, kHeads, kHd, 0.25f};
    kernels::attend(q.data(), dense, shape, a.data(), h, h + 1, scratch.data());
    kernels::attend(q.data(), sel, shape, b.data(), h, h + 1, scratch.data());
    for (int64_t i = h * kHd; i < (h + 1) * kHd; ++i) EXPECT_EQ(a[i], b[i]);
  }
}

// The unit holding a key aligned with the query is chosen; so are the first and last units and
// the window; nothing else with top-k 1.
TEST(SparsePolicy, SelectsTheUnitTheQueryPointsAt) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd), 0);
  SequenceKV kv(pool, 1, sparse(1, 8));
  std::mt19937 rng(2);
  std::vector<float> q(kRow, 0.f), hot(kRow, 0.f);
  q[3] = 1.f;           // head 0 looks along channel 3
  q[kHd + 5] = 1.f;     // head 1 along channel 5
  hot[3] = 40.f;        // a key far along channel 3 (head 0) ...
  hot[kHd + 5] = 40.f;  // ... and channel 5 (head 1)
  const int64_t len = 128, pages = 6, target_page = 3, target_row = 70;  // unit 1 of page 3
  for (int64_t p = 0; p < pages; ++p) {
    kv.begin_segment();
    const int64_t first = kv.append(len, true);
    for (int64_t i = 0; i < len; ++i)
      store_token(kv, first + i, rng, p == target_page && i == target_row ? hot.data() : nullptr);
  }
  for (int64_t j = 0; j < 20; ++j) store_token(kv, kv.append(1, false), rng);
  const int64_t pos = kv.length() - 1;
  for (int64_t h = 0; h < kHeads; ++h) {
    std::vector<KVSpan> sel;
    kv.query_spans(0, pos, h, q.data() + h * kHd, 1, sel);
    std::set<int64_t> want;
    for (int64_t i = 0; i < 64; ++i) want.insert(i);                                          // first unit
    for (int64_t i = target_page * len + 64; i < target_page * len + 128; ++i) want.insert(i);  // the hot unit
    for (int64_t i = pages * len - 64; i < pages * len; ++i) want.insert(i);                  // last unit
    for (int64_t i = pos - 7; i <= pos; ++i) want.insert(i);                                  // window
    const std::multiset<int64_t> got = positions(sel, h);
    EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()), want) << "head " << h;
    EXPECT_EQ(got.size(), want.size());
  }
}

// Bytes read per generated token do not depend on how many pages the reference has.
TEST(SparsePolicy, ActiveBytesFlatInPageCount) {
  auto active = [](int64_t pages, const char* types) {
    KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types(types)), 0);
    SequenceKV kv(pool, 1, sparse(4, 128));
    std::mt19937 rng(3);
    fill(kv, pages, 256, 200, rng);
    const int64_t pos = kv.length() - 1;
    std::vector<float> q(kRow, 0.5f);
    std::vector<KVSpan> sel;
    for (int64_t h = 0; h < kHeads; ++h) kv.query_spans(0, pos, h, q.data() + h * kHd, 1, sel);
    return std::pair(kv.active_bytes(pos), kv.visible_bytes(pos));
  };
  for (const char* t : {"f32", "q8"}) {
    const auto [a10, d10] = active(10, t);
    const auto [a100, d100] = active(100, t);
    EXPECT_EQ(a10, a100) << t;
    EXPECT_GT(d100, 9 * d10 / 2) << t;  // the dense view grows with the pages
    EXPECT_LT(a100, d100 / 10) << t;
  }
}

// The focus segments (the page being read) are read whole by every head, besides the top-k units,
// and the active bytes stay flat in the page count with a page in focus.
TEST(SparsePolicy, FocusPageIsReadWhole) {
  for (const char* t : {"f32", "q8"}) {
    SCOPED_TRACE(t);
    auto run = [&](int64_t pages, std::vector<size_t> focus) {
      KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types(t)), 0);
      KVPolicy pol = sparse(1, 8);
      pol.unit_tokens = 16;
      SequenceKV kv(pool, 1, pol);
      std::mt19937 rng(5);
      fill(kv, pages, 100, 20, rng);
      kv.sparse().set_focus(focus);
      const int64_t pos = kv.length() - 1;
      std::vector<float> q(kRow, 0.25f);
      std::vector<std::multiset<int64_t>> seen;
      for (int64_t h = 0; h < kHeads; ++h) {
        std::vector<KVSpan> sel;
        kv.query_spans(0, pos, h, q.data() + h * kHd, 1, sel);
        seen.push_back(positions(sel, h));
      }
      return std::pair(seen, kv.active_bytes(pos));
    };
    const auto [without, a0] = run(10, {});
    const auto [with, a1] = run(10, {3});
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t p = 300; p < 400; ++p) EXPECT_EQ(with[h].count(p), 1u) << "page 4 row " << p << " head " << h;
      // Without focus, top-1 of 16-token units reads at most 1 + first + last units of the reference.
      int64_t in_page = 0;
      for (int64_t p = 300; p < 400; ++p) in_page += static_cast<int64_t>(without[h].count(p));
      EXPECT_LE(in_page, 16);
      // Everything read without focus is still read with it (the top-k and the window).
      for (int64_t p : without[h]) EXPECT_EQ(with[h].count(p), 1u) << p;
    }
    EXPECT_GT(a1, a0);
    EXPECT_EQ(run(40, {3}).second, a1) << "flat in the page count";
  }
}

TEST(SparsePolicy, RejectsBadParameters) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd), 0);
  KVPolicy p = sparse(0);
  EXPECT_THROW(SequenceKV(pool, 1, p), Error);
  p = sparse(2);
  p.unit_tokens = 0;
  EXPECT_THROW(SequenceKV(pool, 1, p), Error);
}

// Rolling: pages enter after generation started and leave; positions are kept, never re-based.
TEST(RollingPolicy, SegmentsEnterAndLeaveWithKeptPositions) {
  for (const char* types : {"f32", "q8"}) {
    KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types(types)), 0);
    SequenceKV kv(pool, 1, KVPolicy::parse("rolling", 8));
    std::mt19937 rng(4);
    fill(kv, 2, 100, 30, rng);  // pages at 0..99, 100..199; generated 200..229
    const size_t two_pages = kv.bytes();
    kv.drop_segment(0);
    EXPECT_LT(kv.bytes(), two_pages);
    kv.begin_segment();
    const int64_t first = kv.append(100, true);  // a third page enters ahead of the decoder
    EXPECT_EQ(first, 230);                       // kept positions: after the generated tokens
    for (int64_t i = 0; i < 100; ++i) store_token(kv, first + i, rng);
    // A token of the entering page sees the resident reference causally, not the window.
    std::vector<KVSpan> spans;
    kv.visible_spans(0, first + 9, spans);
    std::multiset<int64_t> want;
    for (int64_t p = 100; p < 200; ++p) want.insert(p);
    for (int64_t p = first; p <= first + 9; ++p) want.insert(p);
    EXPECT_EQ(positions(spans), want) << types;
    // Generation goes on: the window continues from generated token 30, and page 0 stays gone.
    for (int64_t j = 0; j < 20; ++j) {
      const int64_t pos = kv.append(1, false);
      EXPECT_EQ(pos, 330 + j);
      store_token(kv, pos, rng);
      spans.clear();
      kv.visible_spans(0, pos, spans);
      std::multiset<int64_t> w;
      for (int64_t p = 100; p < 200; ++p) w.insert(p);
      for (int64_t p = 230; p < 330; ++p) w.insert(p);
      // The last 8 generated tokens: generated indices 30+j-7 .. 30+j, at positions 200.. and 330..
      for (int64_t g = 30 + j - 7; g <= 30 + j; ++g) w.insert(g < 30 ? 200 + g : 330 + (g - 30));
      ASSERT_EQ(positions(spans), w) << types << " step " << j;
    }
    EXPECT_EQ(kv.cached_tokens(), 200 + 8);
    EXPECT_THROW(kv.drop_segment(7), Error);
  }
}

TEST(RollingPolicy, OnlyRollingAppendsReferenceAfterGeneration) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd), 0);
  SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 8));
  std::mt19937 rng(5);
  fill(kv, 1, 10, 1, rng);
  EXPECT_THROW(kv.append(5, true), Error);
  EXPECT_THROW(kv.drop_segment(0), Error);
}

}  // namespace
}  // namespace folio
