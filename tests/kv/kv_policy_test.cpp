// KVPolicy: parsing, and the questions the code around the cache asks instead of testing the kind.
#include "kv/kv_policy.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace folio {
namespace {

TEST(KVPolicy, ParsesEveryNameAndRefusesOthers) {
  EXPECT_EQ(KVPolicy::parse("reference_sliding_window", 64).name(), "rswa");
  for (const char* n : {"full", "rswa", "sparse", "rolling"}) EXPECT_EQ(KVPolicy::parse(n, 8).name(), n);
  EXPECT_EQ(KVPolicy::parse("rswa", 64).window, 64);
  EXPECT_THROW(KVPolicy::parse("sliding", 64), Error);
  EXPECT_THROW(KVPolicy::parse("rswa", 0), Error);
}

TEST(KVPolicy, AnswersWhatEachKindMeans) {
  const KVPolicy full = KVPolicy::parse("full", 8), rswa = KVPolicy::parse("rswa", 8), sparse = KVPolicy::parse("sparse", 8),
                 rolling = KVPolicy::parse("rolling", 8);
  EXPECT_FALSE(full.windowed());
  EXPECT_TRUE(rswa.windowed() && sparse.windowed() && rolling.windowed());
  EXPECT_TRUE(rolling.rolls());
  EXPECT_FALSE(full.rolls() || rswa.rolls() || sparse.rolls());
  EXPECT_TRUE(sparse.focuses_pages());
  EXPECT_FALSE(full.focuses_pages() || rswa.focuses_pages() || rolling.focuses_pages());
  EXPECT_FALSE(rolling.reference_reusable());
  EXPECT_TRUE(full.reference_reusable() && rswa.reference_reusable() && sparse.reference_reusable());
  // 100 pages; the model takes up to 63 per pass; the engine's default for a whole reference is 20.
  EXPECT_EQ(full.automatic_pages_per_pass(100, 63, 20), 20u);
  EXPECT_EQ(rswa.automatic_pages_per_pass(100, 63, 20), 20u);
  EXPECT_EQ(rswa.automatic_pages_per_pass(100, 1, 20), 1u);  // Gundam: one page per pass
  EXPECT_EQ(sparse.automatic_pages_per_pass(100, 63, 20), 63u);
  EXPECT_EQ(rolling.automatic_pages_per_pass(100, 63, 20), 100u);
}

}  // namespace
}  // namespace folio
