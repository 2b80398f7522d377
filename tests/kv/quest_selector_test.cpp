// Quest selection: unit cuts, key bounds, and which rows a query reads.
#include <gtest/gtest.h>

#include <vector>

#include "kv/quest_selector.h"

namespace folio {
namespace {

TEST(QuestSelector, CutsAtMarksAndEveryUnitTokens) {
  UnitBounds b;
  b.cut(10, {7, 3, 3, 0, 12}, 4);  // duplicates and marks outside (0, 10) are ignored
  EXPECT_EQ(b.starts, (std::vector<int64_t>{0, 3, 7}));
  b.cut(10, {}, 4);
  EXPECT_EQ(b.starts, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(b.unit_end(2), 10);
}

// One layer, one KV head, head_dim 1: unit u's keys are exactly {value[u]}.
UnitBounds one_key_per_unit(const std::vector<float>& values) {
  UnitBounds b;
  b.cut(static_cast<int64_t>(values.size()), {}, 1);
  b.reset(1, 1, 1);
  for (size_t u = 0; u < values.size(); ++u) b.widen(0, u, 0, 1, 1, &values[u], 1);
  return b;
}

TEST(QuestSelector, ReadsTheBestUnitsPlusFirstLastAndFocus) {
  const UnitBounds a = one_key_per_unit({0, 5, -1, 9, 0}), b = one_key_per_unit({3, 0, 8});
  const float q = 1;
  std::vector<const UnitBounds*> segs = {&a, &b};
  std::vector<SelectedRows> out;
  select_units(segs, {0, 0, 1, 1, &q, 1, 2, {}}, out);
  // Forced: a's unit 0 (first) and b's unit 2 (last); the top 2 of the rest: a[3] = 9, b[2] is
  // forced already, then a[1] = 5.
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].segment, 0u);
  EXPECT_EQ(out[0].begin, 0);
  EXPECT_EQ(out[0].end, 2);  // units 0 and 1 merged
  EXPECT_EQ(out[1].begin, 3);
  EXPECT_EQ(out[1].end, 4);
  EXPECT_EQ(out[2].segment, 1u);
  EXPECT_EQ(out[2].begin, 2);
  // A negative query prefers the smallest keys; a focus segment is read whole.
  const float neg = -1;
  const size_t focus[] = {1};
  out.clear();
  select_units(segs, {0, 0, 1, 1, &neg, 1, 1, focus}, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].end, 1);  // a[0] (first)
  EXPECT_EQ(out[1].begin, 2);  // a[2] = -1, the best bound for -q
  EXPECT_EQ(out[2].segment, 1u);
  EXPECT_EQ(out[2].begin, 0);
  EXPECT_EQ(out[2].end, 3);  // all of b
}

// Candidate segments (the pages near the one being read): the top-k comes only from them, while
// the first and last live segments' end units are still read.
TEST(QuestSelector, TopKComesOnlyFromTheCandidateSegments) {
  const UnitBounds a = one_key_per_unit({0, 1, 0}), b = one_key_per_unit({9, 9, 9}), c = one_key_per_unit({2, 3, 0}),
                   d = one_key_per_unit({0, 0, 0});
  const float q = 1;
  std::vector<const UnitBounds*> segs = {&a, &b, &c, &d};
  const size_t near[] = {2};
  std::vector<SelectedRows> out;
  select_units(segs, {0, 0, 1, 1, &q, 1, 2, {}, near}, out);
  // Forced: a[0] and d[2]; the top 2 from c only (b's 9s are not candidates): c[1] = 3, c[0] = 2.
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].segment, 0u);
  EXPECT_EQ(out[0].end, 1);
  EXPECT_EQ(out[1].segment, 2u);
  EXPECT_EQ(out[1].begin, 0);
  EXPECT_EQ(out[1].end, 2);
  EXPECT_EQ(out[2].segment, 3u);
  EXPECT_EQ(out[2].begin, 2);
  // Without candidates, b's units win.
  out.clear();
  select_units(segs, {0, 0, 1, 1, &q, 1, 2, {}}, out);
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out[1].segment, 1u);
}

TEST(QuestSelector, EveryUnitSelectedGivesTheDenseRowsAndDroppedSegmentsAreSkipped) {
  const UnitBounds a = one_key_per_unit({1, 2, 3}), b = one_key_per_unit({4, 5});
  const float q = 1;
  std::vector<const UnitBounds*> segs = {&a, nullptr, &b};
  std::vector<SelectedRows> out;
  select_units(segs, {0, 0, 1, 1, &q, 1, 100, {}}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].segment, 0u);
  EXPECT_EQ(out[0].end, 3);
  EXPECT_EQ(out[1].segment, 2u);
  EXPECT_EQ(out[1].begin, 0);
  EXPECT_EQ(out[1].end, 2);
}

}  // namespace
}  // namespace folio
