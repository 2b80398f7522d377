// FileTier specifics: the file never outlives the tier, grows in chunks, reuses slots by size class,
// and names its path when the budget or the disk runs out.
#include "kv/file_tier.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstring>

#include "tier_test_util.h"

namespace folio {
namespace {

using test::error_of;
using test::random_block;

TEST(FileTier, FileIsUnlinkedAtOnceAndClosedOnDestruction) {
  test::ScratchDir dir;
  std::filesystem::path path;
  {
    FileTier tier(dir.path(), 1 << 20, 4096);
    path = tier.path();
    EXPECT_EQ(path.parent_path(), dir.path());
    EXPECT_NE(path.filename().string().find("folio-kv-"), std::string::npos);
    tier.put({0, 0, 0}, std::vector<uint8_t>(1000, 7));
    EXPECT_EQ(dir.entries(), 0u);                      // no name on disk, even while in use
    EXPECT_EQ(test::open_descriptors_to(path), 1u);    // held open only by the tier
  }
  EXPECT_EQ(dir.entries(), 0u);
  EXPECT_EQ(test::open_descriptors_to(path), 0u);      // disk space released with the descriptor
}

TEST(FileTier, GrowsInChunksWithPointersThatNeverMove) {
  test::ScratchDir dir;
  std::mt19937_64 rng(1);
  FileTier tier(dir.path(), 1 << 20, 4096);
  EXPECT_EQ(tier.file_bytes(), 0u);
  std::vector<std::vector<uint8_t>> kept;
  std::vector<const uint8_t*> views;
  for (int64_t i = 0; i < 100; ++i) {
    kept.push_back(random_block(rng, 1000));  // size class 1024
    tier.put({0, 0, i}, kept.back());
    views.push_back(tier.view({0, 0, i}));
    // Whole chunks, just enough for the slots so far.
    EXPECT_EQ(tier.file_bytes(), (static_cast<size_t>(i + 1) * 1024 + 4095) / 4096 * 4096) << i;
  }
  EXPECT_EQ(tier.footprint_bytes(), tier.file_bytes());
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(tier.view({0, 0, i}), views[static_cast<size_t>(i)]);
    EXPECT_EQ(std::memcmp(views[static_cast<size_t>(i)], kept[static_cast<size_t>(i)].data(), 1000), 0) << i;
  }
}

// Expects the block's bytes at its view.
void expect_block(const FileTier& tier, const BlockKey& k, const std::vector<uint8_t>& b) {
  ASSERT_EQ(tier.size_of(k), b.size());
  EXPECT_EQ(std::memcmp(tier.view(k), b.data(), b.size()), 0) << to_string(k);
}

TEST(FileTier, FreeSlotsAreReusedSplitAndMerged) {
  test::ScratchDir dir;
  std::mt19937_64 rng(2);
  // Exactly 128 + 512 + 64 bytes: every later block must fit in freed space or fail.
  FileTier tier(dir.path(), 704, 4096);
  const uint8_t* base;
  {
    tier.put({0, 0, 0}, random_block(rng, 100));  // slot 128 at 0
    base = tier.view({0, 0, 0});
    tier.put({0, 0, 1}, random_block(rng, 500));  // slot 512 at 128
    tier.put({0, 0, 2}, random_block(rng, 64));   // slot 64 at 640: the file is full
  }
  EXPECT_FALSE(tier.can_put(1));
  // Its own size class: the freed slot.
  tier.erase({0, 0, 0});
  auto d = random_block(rng, 120);
  tier.put({1, 0, 0}, d);
  EXPECT_EQ(tier.view({1, 0, 0}), base);
  // A smaller block splits a larger free slot; the rest stays free for the next one.
  tier.erase({0, 0, 1});
  auto e = random_block(rng, 100), f = random_block(rng, 300);
  tier.put({1, 0, 1}, e);  // 128 at 128
  tier.put({1, 0, 2}, f);  // 320 at 256, leaving 64 at 576
  EXPECT_EQ(tier.view({1, 0, 1}), base + 128);
  EXPECT_EQ(tier.view({1, 0, 2}), base + 256);
  EXPECT_TRUE(tier.can_put(64));
  EXPECT_FALSE(tier.can_put(65));
  // Freed neighbours merge back into one 512-byte slot.
  tier.erase({1, 0, 1});
  tier.erase({1, 0, 2});
  auto g = random_block(rng, 512);
  tier.put({1, 0, 3}, g);
  EXPECT_EQ(tier.view({1, 0, 3}), base + 128);
  expect_block(tier, {1, 0, 0}, d);
  expect_block(tier, {1, 0, 3}, g);
  EXPECT_EQ(tier.bytes_in_use(), 120u + 512u + 64u);
  // Free space at the end returns to the end: three freed slots make room for one 704-byte block.
  tier.erase({0, 0, 2});
  tier.erase({1, 0, 3});
  tier.erase({1, 0, 0});
  auto h = random_block(rng, 704);
  tier.put({2, 0, 0}, h);
  EXPECT_EQ(tier.view({2, 0, 0}), base);
  expect_block(tier, {2, 0, 0}, h);
  EXPECT_LE(tier.file_bytes(), 704u);
}

TEST(FileTier, BudgetExhaustedNamesThePathAndBudget) {
  test::ScratchDir dir;
  FileTier tier(dir.path(), 1000, 4096);
  for (int64_t i = 0; i < 3; ++i) tier.put({0, 0, i}, std::vector<uint8_t>(256, 1));
  EXPECT_LE(tier.file_bytes(), 1000u);
  EXPECT_FALSE(tier.can_put(256));
  EXPECT_TRUE(tier.can_put(150));  // its 192-byte slot fits in the 232 left
  std::string msg = error_of([&] { tier.put({0, 0, 3}, std::vector<uint8_t>(256, 1)); }, Error::Kind::OutOfMemory);
  EXPECT_NE(msg.find(tier.path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("768 of its 1000 byte budget"), std::string::npos) << msg;
  EXPECT_EQ(tier.block_count(), 3u);
}

TEST(FileTier, FullDiskIsAnErrorNamingThePathAndTheTierStaysUsable) {
  test::ScratchDir dir;
  FileTier tier(dir.path(), 1 << 20, 4096);
  std::mt19937_64 rng(3);
  auto first = random_block(rng, 4096);
  tier.put({0, 0, 0}, first);  // the file is one chunk now
  // Simulate a full disk: a per-process file size limit makes the next growth fail (EFBIG).
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string msg;
  try {
    tier.put({0, 0, 1}, random_block(rng, 4096));
  } catch (const Error& e) {
    msg = e.what();
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(Error::Kind::OutOfMemory));
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find(tier.path().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("disk full"), std::string::npos) << msg;
  EXPECT_FALSE(tier.contains({0, 0, 1}));
  EXPECT_EQ(tier.file_bytes(), 4096u);
  // With space back, the tier carries on where it was.
  auto second = random_block(rng, 4096);
  tier.put({0, 0, 1}, second);
  EXPECT_EQ(std::memcmp(tier.view({0, 0, 0}), first.data(), first.size()), 0);
  EXPECT_EQ(std::memcmp(tier.view({0, 0, 1}), second.data(), second.size()), 0);
  EXPECT_EQ(tier.file_bytes(), 8192u);
}

TEST(FileTier, BadDirectoryOrBudgetIsRefused) {
  test::ScratchDir dir;
  auto missing = dir.path() / "no-such-dir";
  std::string msg = error_of([&] { FileTier t(missing, 1 << 20); }, Error::Kind::Io);
  EXPECT_NE(msg.find(missing.string()), std::string::npos) << msg;
  msg = error_of([&] { FileTier t(dir.path(), 0); }, Error::Kind::InvalidInput);
  EXPECT_NE(msg.find("budget"), std::string::npos) << msg;
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace folio
