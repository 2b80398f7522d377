// PolicyRules: each kind answers the cache's questions as kv_policy.h describes it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/kv_policy.h"
#include "kv/policy_rules.h"

namespace folio {
namespace {

TEST(PolicyRules, EachKindAnswersAsDescribed) {
  const PolicyRules& full = PolicyRules::of(KVPolicyKind::Full);
  const PolicyRules& rswa = PolicyRules::of(KVPolicyKind::RSwa);
  const PolicyRules& sparse = PolicyRules::of(KVPolicyKind::Sparse);
  const PolicyRules& rolling = PolicyRules::of(KVPolicyKind::Rolling);
  EXPECT_FALSE(full.windowed());
  EXPECT_TRUE(rswa.windowed() && sparse.windowed() && rolling.windowed());
  EXPECT_TRUE(sparse.selects_units() && sparse.focuses_pages());
  EXPECT_FALSE(full.selects_units() || rswa.selects_units() || rolling.selects_units());
  EXPECT_TRUE(rolling.grows_reference_while_generating() && rolling.drops_segments());
  EXPECT_FALSE(rswa.drops_segments() || sparse.drops_segments() || full.drops_segments());
  EXPECT_FALSE(rolling.reference_reusable());
  EXPECT_TRUE(full.reference_reusable() && rswa.reference_reusable() && sparse.reference_reusable());
  // Pages per pass: rolling reads the document in one pass, sparse as many as the model takes,
  // full and rswa up to the engine's default.
  EXPECT_EQ(rolling.pages_per_pass(40, 10, 5), 40u);
  EXPECT_EQ(sparse.pages_per_pass(40, 10, 5), 10u);
  EXPECT_EQ(rswa.pages_per_pass(40, 10, 5), 5u);
  EXPECT_EQ(full.pages_per_pass(40, 3, 5), 3u);
}

TEST(PolicyRules, KVPolicyAsksItsKindsRules) {
  for (const char* name : {"full", "rswa", "sparse", "rolling"}) {
    const KVPolicy p = KVPolicy::parse(name, 16);
    EXPECT_EQ(&p.rules(), &PolicyRules::of(p.kind)) << name;
    EXPECT_EQ(p.windowed(), p.rules().windowed()) << name;
    EXPECT_EQ(p.rolls(), p.rules().grows_reference_while_generating()) << name;
  }
}

TEST(PolicyRules, ValidationBelongsToTheKind) {
  KVPolicy p = KVPolicy::parse("rswa", 8);
  p.top_k = 0;  // not read by rswa
  EXPECT_NO_THROW(p.rules().validate(p));
  p.kind = KVPolicyKind::Sparse;
  EXPECT_THROW(p.rules().validate(p), Error);
  p.top_k = 4;
  p.unit_tokens = 0;
  EXPECT_THROW(p.rules().validate(p), Error);
  EXPECT_THROW(KVPolicy::parse("full", 0), Error);
}

}  // namespace
}  // namespace folio
