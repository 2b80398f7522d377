// PrefixKVCache::insert: one entry per chain, and a shorter chain of the same first parts without
// logits (what the scheduler keeps when prefill ends) goes when the whole reference arrives; one
// with logits (another request's whole reference) stays.
#include "runtime/prefix_kv_cache.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

PrefixKVCache::Entry entry(std::vector<std::string> keys, bool logits) {
  auto snap = std::make_shared<ReferenceSnapshot>();
  for (size_t i = 0; i < keys.size(); ++i) {
    ReferenceSnapshot::Segment s;
    s.length = 4;
    s.layers.push_back({{4, KVDType::F32, KVDType::F32, std::vector<uint8_t>(100)}});
    snap->segments.push_back(s);
  }
  PrefixKVCache::Entry e;
  e.keys = std::move(keys);
  e.kv = std::move(snap);
  if (logits) e.logits.assign(10, 0.5f);
  return e;
}

TEST(PrefixKVCache, AWholeReferenceReplacesTheShorterChainKeptWithoutLogits) {
  PrefixKVCache cache(1 << 20);
  cache.insert(entry({"a", "ab"}, false));
  cache.insert(entry({"x", "xy"}, false));  // another chain: stays
  cache.insert(entry({"a"}, true));         // a shorter whole reference of its own: stays
  ASSERT_EQ(cache.stats().entries, 3u);
  cache.insert(entry({"a", "ab", "abc"}, true));
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_FALSE(cache.contains({"a", "ab"}, false));
  EXPECT_TRUE(cache.contains({"a"}, true));
  EXPECT_TRUE(cache.contains({"x", "xy"}, false));
  EXPECT_EQ(cache.stats().bytes, 3 * 100 + 10 * sizeof(float) + 2 * 100 + (100 + 10 * sizeof(float)));
  // The longer entry serves a request sharing its first two parts.
  const PrefixKVCache::Match m = cache.lookup({"a", "ab", "zzz"});
  EXPECT_EQ(m.parts, 2u);
}

}  // namespace
}  // namespace folio
