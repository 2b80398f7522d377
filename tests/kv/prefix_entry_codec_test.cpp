// Reference KV as bytes between replicas: a snapshot taken from a real sequence comes back equal,
// restores into a sequence of the same layout, and anything cut, padded or taken with another
// layout is refused instead of restored.
#include "runtime/prefix_entry_codec.h"

#include <gtest/gtest.h>

#include "kv/kv_footprint.h"
#include "kv/sequence_kv.h"
#include "sequence_fill.h"

namespace folio {
namespace {

KVLayout layout(KVDType t, int64_t layers = test::kFillLayers) {
  return KVLayout(layers, test::kFillHeads, test::kFillHd, KVTypes::uniform(t));
}

// An entry of two parts (20 and 7 tokens, the second with a unit start) taken from a sequence of
// `pool` that went on generating (so both parts are complete).
PrefixKVCache::Entry entry_from(KVBlockPool& pool, const KVPolicy& policy) {
  SequenceKV kv(pool, 1, policy, 16);
  test::append_segment(kv, 20);
  test::append_segment(kv, 7, {3});
  test::generate(kv, 4);
  PrefixKVCache::Entry e;
  e.keys = {"a", "b"};
  e.kv = std::make_shared<const ReferenceSnapshot>(kv.snapshot(kv.snapshot_segments()));
  e.logits = {1.f, 2.f, 3.f};
  return e;
}

TEST(PrefixEntryCodec, RoundTripsAndFitsOnlyItsLayout) {
  const KVPolicy policy = KVPolicy::parse("rswa", 8);
  KVBlockPool pool(layout(KVDType::BF16), 0);
  const PrefixKVCache::Entry e = entry_from(pool, policy);
  ASSERT_EQ(e.kv->segments.size(), 2u);
  const std::string bytes = encode_prefix_entry(e);
  const std::optional<PrefixKVCache::Entry> back = decode_prefix_entry(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->keys, e.keys);
  EXPECT_EQ(back->logits, e.logits);
  ASSERT_EQ(back->kv->segments.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(back->kv->segments[s].length, e.kv->segments[s].length);
    EXPECT_EQ(back->kv->segments[s].unit_starts, e.kv->segments[s].unit_starts);
    for (size_t l = 0; l < e.kv->segments[s].layers.size(); ++l)
      for (size_t b = 0; b < e.kv->segments[s].layers[l].size(); ++b)
        EXPECT_EQ(back->kv->segments[s].layers[l][b].bytes, e.kv->segments[s].layers[l][b].bytes);
  }
  const int64_t bt = KVFootprint(pool, policy, 16).block_tokens();
  EXPECT_TRUE(prefix_entry_fits(*back, pool, bt, 3));
  EXPECT_FALSE(prefix_entry_fits(*back, pool, bt, 4)) << "another vocabulary";
  KVBlockPool f32(layout(KVDType::F32), 0);
  EXPECT_FALSE(prefix_entry_fits(*back, f32, bt, 3)) << "another storage type";
  KVBlockPool deeper(layout(KVDType::BF16, test::kFillLayers + 1), 0);
  EXPECT_FALSE(prefix_entry_fits(*back, deeper, bt, 3)) << "another layer count";
  // It restores into a fresh sequence, which then holds the same bytes.
  SequenceKV fresh(pool, 2, policy, 16);
  fresh.restore(*back->kv, 2);
  EXPECT_EQ(fresh.length(), 27);
  EXPECT_EQ(fresh.snapshot(2).bytes(), e.kv->bytes());
  // Cut anywhere, padded, or with a block's bytes shortened: refused.
  for (size_t cut : {size_t{0}, size_t{8}, bytes.size() / 3, bytes.size() - 1})
    EXPECT_FALSE(decode_prefix_entry(bytes.substr(0, cut))) << cut;
  EXPECT_FALSE(decode_prefix_entry(bytes + "x"));
  PrefixKVCache::Entry shorter = *back;
  auto snap = std::make_shared<ReferenceSnapshot>(*shorter.kv);
  snap->segments[0].layers[1][0].bytes.pop_back();
  shorter.kv = snap;
  const std::optional<PrefixKVCache::Entry> reread = decode_prefix_entry(encode_prefix_entry(shorter));
  ASSERT_TRUE(reread);
  EXPECT_FALSE(prefix_entry_fits(*reread, pool, bt, 3)) << "a block of the wrong size";
}

}  // namespace
}  // namespace folio
