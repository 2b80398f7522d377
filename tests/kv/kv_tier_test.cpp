// The KVTier contract, checked for every tier that implements it (RAM and file).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "core/error.h"
#include "kv/file_tier.h"
#include "kv/ram_tier.h"
#include "tier_test_util.h"

namespace folio {
namespace {

using test::error_of;
using test::random_block;

struct TierFactory {
  std::string label;
  std::function<std::unique_ptr<KVTier>(const std::filesystem::path& dir, size_t capacity)> make;
};

class KVTierContract : public testing::TestWithParam<TierFactory> {
 protected:
  std::unique_ptr<KVTier> make(size_t capacity) { return GetParam().make(dir_.path(), capacity); }
  test::ScratchDir dir_;
  std::mt19937_64 rng_{42};
};

std::vector<uint8_t> read(const KVTier& t, const BlockKey& k) {
  std::vector<uint8_t> out(t.size_of(k));
  t.get(k, out);
  return out;
}

TEST_P(KVTierContract, StoresOverwritesAndErasesExactBytes) {
  auto tier = make(1 << 20);
  const BlockKey a{1, 0, 0}, b{1, 0, 1}, c{2, 3, 0};
  auto ba = random_block(rng_, 100), bb = random_block(rng_, 64), bc = random_block(rng_, 1);
  tier->put(a, ba);
  tier->put(b, bb);
  tier->put(c, bc);
  EXPECT_EQ(tier->block_count(), 3u);
  EXPECT_EQ(tier->bytes_in_use(), 165u);
  EXPECT_GE(tier->footprint_bytes(), tier->bytes_in_use());
  EXPECT_EQ(read(*tier, a), ba);
  EXPECT_EQ(read(*tier, b), bb);
  EXPECT_EQ(read(*tier, c), bc);
  ASSERT_TRUE(tier->addressable());
  const uint8_t* pa = tier->view(a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pa) % 64, 0u);  // SIMD kernels read blocks in place
  EXPECT_EQ(std::memcmp(pa, ba.data(), ba.size()), 0);

  // Same size: written where it is.
  auto ba2 = random_block(rng_, 100);
  tier->put(a, ba2);
  EXPECT_EQ(tier->view(a), pa);
  EXPECT_EQ(read(*tier, a), ba2);
  // Another size: replaced, accounted.
  auto bb2 = random_block(rng_, 300);
  tier->put(b, bb2);
  EXPECT_EQ(tier->size_of(b), 300u);
  EXPECT_EQ(read(*tier, b), bb2);
  EXPECT_EQ(tier->bytes_in_use(), 100u + 300u + 1u);

  tier->erase(c);
  EXPECT_FALSE(tier->contains(c));
  EXPECT_TRUE(tier->contains(a));
  EXPECT_EQ(tier->block_count(), 2u);
  EXPECT_EQ(tier->bytes_in_use(), 400u);
  EXPECT_EQ(read(*tier, a), ba2);
}

TEST_P(KVTierContract, BudgetIsNeverExceededAndRefusalsChangeNothing) {
  const size_t cap = 256;
  auto tier = make(cap);
  std::vector<std::vector<uint8_t>> kept;
  int64_t n = 0;
  while (tier->can_put(64)) {
    kept.push_back(random_block(rng_, 64));
    tier->put({0, 0, n++}, kept.back());
    EXPECT_LE(tier->footprint_bytes(), cap);
  }
  EXPECT_EQ(n, 4);  // 4 x 64 bytes fill 256 exactly
  const size_t bytes = tier->bytes_in_use(), footprint = tier->footprint_bytes();
  std::string msg = error_of([&] { tier->put({0, 0, 99}, random_block(rng_, 64)); }, Error::Kind::OutOfMemory);
  EXPECT_NE(msg.find("256"), std::string::npos) << msg;
  EXPECT_NE(msg.find(tier->location()), std::string::npos) << msg;
  // Growing an existing block past the budget keeps its old bytes.
  error_of([&] { tier->put({0, 0, 1}, random_block(rng_, 200)); }, Error::Kind::OutOfMemory);
  EXPECT_FALSE(tier->contains({0, 0, 99}));
  EXPECT_EQ(tier->bytes_in_use(), bytes);
  EXPECT_EQ(tier->footprint_bytes(), footprint);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(read(*tier, {0, 0, i}), kept[static_cast<size_t>(i)]);
  // Room comes back on erase.
  tier->erase({0, 0, 2});
  EXPECT_TRUE(tier->can_put(64));
  tier->put({0, 0, 99}, kept[2]);
  EXPECT_LE(tier->footprint_bytes(), cap);
}

TEST_P(KVTierContract, MisuseIsAnInternalErrorNamingTheBlock) {
  auto tier = make(1 << 16);
  tier->put({1, 2, 3}, random_block(rng_, 100));
  std::vector<uint8_t> small(99);
  std::string msg = error_of([&] { tier->get({1, 2, 3}, small); }, Error::Kind::Internal);
  EXPECT_NE(msg.find("seq 1 layer 2 block 3 is 100 bytes, 99 requested"), std::string::npos) << msg;
  const BlockKey missing{9, 8, 7};
  for (auto f : std::vector<std::function<void()>>{[&] { tier->view(missing); }, [&] { tier->erase(missing); },
                                                   [&] { tier->size_of(missing); }}) {
    msg = error_of(f, Error::Kind::Internal);
    EXPECT_NE(msg.find("holds no block seq 9 layer 8 block 7"), std::string::npos) << msg;
  }
  error_of([&] { tier->put({1, 1, 1}, std::span<const uint8_t>()); }, Error::Kind::Internal);
  EXPECT_EQ(tier->block_count(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, KVTierContract,
    testing::Values(TierFactory{"ram", [](const std::filesystem::path&, size_t cap) -> std::unique_ptr<KVTier> {
                                  return std::make_unique<RamTier>(cap);
                                }},
                    TierFactory{"file", [](const std::filesystem::path& dir, size_t cap) -> std::unique_ptr<KVTier> {
                                  return std::make_unique<FileTier>(dir, cap, 4096);
                                }}),
    [](const testing::TestParamInfo<TierFactory>& info) { return info.param.label; });

}  // namespace
}  // namespace folio
