// TieredStore: placement, LRU demotion, promotion or in-place cold reads, pins, budgets, errors,
// and byte-exactness through any sequence of moves (checked against copies kept by the test).
#include "kv/tiered_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <atomic>
#include <map>
#include <thread>

#include "kv/file_tier.h"
#include "kv/ram_tier.h"
#include "tier_test_util.h"

namespace folio {
namespace {

using test::error_of;
using test::random_block;

// A tier that can only be copied from, like a remote store: view() gives nullptr.
class CopyOnlyTier final : public KVTier {
 public:
  explicit CopyOnlyTier(size_t capacity) : ram_(capacity) {}
  std::string name() const override { return "remote"; }
  std::string location() const override { return "test remote"; }
  size_t capacity_bytes() const override { return ram_.capacity_bytes(); }
  size_t bytes_in_use() const override { return ram_.bytes_in_use(); }
  size_t footprint_bytes() const override { return ram_.footprint_bytes(); }
  size_t block_count() const override { return ram_.block_count(); }
  bool addressable() const override { return false; }
  bool can_put(size_t bytes) const override { return ram_.can_put(bytes); }
  bool contains(const BlockKey& key) const override { return ram_.contains(key); }
  size_t size_of(const BlockKey& key) const override { return ram_.size_of(key); }
  void put(const BlockKey& key, std::span<const uint8_t> bytes) override { ram_.put(key, bytes); }
  void get(const BlockKey& key, std::span<uint8_t> out) const override { ram_.get(key, out); }
  const uint8_t* view(const BlockKey& key) const override {
    ram_.size_of(key);  // same error as the others when missing
    return nullptr;
  }
  void erase(const BlockKey& key) override { ram_.erase(key); }

 private:
  RamTier ram_;
};

constexpr size_t kBlock = 64;  // one slot exactly in both the RAM and the file tier

BlockKey key(int64_t i) { return {0, 0, i}; }

class TieredStoreTest : public testing::Test {
 protected:
  // Hot RAM of `hot_blocks` 64-byte blocks over a file of `cold_blocks` of them (4 KiB chunks).
  std::unique_ptr<TieredStore> make(size_t hot_blocks, size_t cold_blocks) {
    return std::make_unique<TieredStore>(std::make_unique<RamTier>(hot_blocks * kBlock),
                                         std::make_unique<FileTier>(dir_.path(), cold_blocks * kBlock, 4096));
  }
  // Puts block i with fresh random bytes, keeping a copy.
  void put(TieredStore& s, int64_t i, size_t size = kBlock) {
    kept_[i] = random_block(rng_, size);
    s.put(key(i), kept_[i]);
  }
  // Acquires, compares with the kept copy, releases.
  void expect_bytes(TieredStore& s, int64_t i) {
    TieredStore::Pin pin(s, key(i));
    ASSERT_EQ(s.size_of(key(i)), kept_[i].size());
    EXPECT_EQ(std::memcmp(pin.data(), kept_[i].data(), kept_[i].size()), 0) << "block " << i;
  }

  test::ScratchDir dir_;
  std::mt19937_64 rng_{7};
  std::map<int64_t, std::vector<uint8_t>> kept_;
};

TEST_F(TieredStoreTest, PutDemotesTheLeastRecentlyUsedHotBlock) {
  auto s = make(4, 64);
  for (int64_t i = 0; i < 10; ++i) {
    put(*s, i);
    EXPECT_EQ(s->tier_of(key(i)), 0u);  // new blocks go hot
    if (i >= 4) {
      EXPECT_EQ(s->tier_of(key(i - 4)), 1u) << "the oldest hot block leaves first";
    }
  }
  // Hot: 6 7 8 9. Using 7 then 6 makes 8 and 9 the least recently used.
  expect_bytes(*s, 7);
  expect_bytes(*s, 6);
  put(*s, 10);
  EXPECT_EQ(s->tier_of(key(8)), 1u);
  EXPECT_EQ(s->tier_of(key(9)), 0u);
  put(*s, 11);
  EXPECT_EQ(s->tier_of(key(9)), 1u);
  for (int64_t i : {6, 7, 10, 11}) EXPECT_EQ(s->tier_of(key(i)), 0u) << i;
  auto st = s->stats();
  EXPECT_EQ(st.tiers[0].demotions, 8u);
  EXPECT_EQ(st.tiers[0].blocks, 4u);
  EXPECT_EQ(st.tiers[1].blocks, 8u);
  EXPECT_EQ(st.tiers[0].bytes, 4 * kBlock);
  EXPECT_EQ(st.tiers[1].bytes, 8 * kBlock);
  EXPECT_EQ(st.bytes(), 12 * kBlock);
  for (auto& [i, b] : kept_) expect_bytes(*s, i);
}

TEST_F(TieredStoreTest, AcquirePromotesIntoFreeHotRoomElseReadsTheColdMappingInPlace) {
  auto s = make(2, 64);
  for (int64_t i = 0; i < 4; ++i) put(*s, i);  // hot: 2 3, cold: 0 1
  s->erase(key(3));                             // one hot slot free
  const uint8_t* p0 = s->acquire(key(0));
  EXPECT_EQ(s->tier_of(key(0)), 0u);            // promoted into the free room
  EXPECT_EQ(p0, s->tier(0).view(key(0)));
  const uint8_t* p1 = s->acquire(key(1));
  EXPECT_EQ(s->tier_of(key(1)), 1u);            // hot full: read where it is, nothing demoted
  EXPECT_EQ(p1, s->tier(1).view(key(1)));
  EXPECT_EQ(std::memcmp(p0, kept_[0].data(), kBlock), 0);
  EXPECT_EQ(std::memcmp(p1, kept_[1].data(), kBlock), 0);
  s->release(key(0));
  s->release(key(1));
  expect_bytes(*s, 2);  // a hot hit
  auto st = s->stats();
  EXPECT_EQ(st.acquires, 3u);
  EXPECT_EQ(st.tiers[0].hits, 1u);
  EXPECT_EQ(st.tiers[1].hits, 1u);  // the cold read
  EXPECT_EQ(st.tiers[1].promotions, 1u);
  EXPECT_EQ(st.tiers[0].demotions, 2u);  // from the puts only
  EXPECT_EQ(st.misses, 2u);
}

TEST_F(TieredStoreTest, PinnedBlocksNeverMove) {
  auto s = make(2, 64);
  put(*s, 0);
  put(*s, 1);
  TieredStore::Pin b(*s, key(1));
  TieredStore::Pin a(*s, key(0));
  put(*s, 2);  // hot is all pinned: the new block goes cold, nothing is demoted
  EXPECT_EQ(s->tier_of(key(0)), 0u);
  EXPECT_EQ(s->tier_of(key(1)), 0u);
  EXPECT_EQ(s->tier_of(key(2)), 1u);
  EXPECT_EQ(s->stats().tiers[0].demotions, 0u);
  EXPECT_EQ(s->stats().tiers[0].pinned_blocks, 2u);
  a.reset();
  put(*s, 3);  // block 1 is the least recently used but pinned: block 0 goes
  EXPECT_EQ(s->tier_of(key(0)), 1u);
  EXPECT_EQ(s->tier_of(key(1)), 0u);
  EXPECT_EQ(b.data(), s->tier(0).view(key(1)));
  EXPECT_EQ(std::memcmp(b.data(), kept_[1].data(), kBlock), 0);

  // A block pinned in place in the cold tier stays there even when hot room appears.
  TieredStore::Pin c(*s, key(2));
  EXPECT_EQ(s->tier_of(key(2)), 1u);
  s->erase(key(3));
  TieredStore::Pin c2(*s, key(2));  // nested acquire: same place, same pointer
  EXPECT_EQ(c2.data(), c.data());
  EXPECT_EQ(s->tier_of(key(2)), 1u);
  EXPECT_EQ(s->stats().tiers[1].pinned_blocks, 1u);
}

TEST_F(TieredStoreTest, BothTiersFullIsOutOfMemoryNamingTheBudgetsAndChangesNothing) {
  auto s = make(2, 2);
  for (int64_t i = 0; i < 4; ++i) put(*s, i);
  auto before = s->stats();
  std::string msg = error_of([&] { put(*s, 4); }, Error::Kind::OutOfMemory);
  kept_.erase(4);
  const std::string path = static_cast<const FileTier&>(s->tier(1)).path().string();
  EXPECT_NE(msg.find("no tier can take block seq 0 layer 0 block 4 (64 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ram tier (RAM): 128 of 128 budget bytes used, 2 blocks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file tier (" + path + "): 128 of 128 budget bytes used, 2 blocks"), std::string::npos) << msg;
  EXPECT_FALSE(s->contains(key(4)));
  auto after = s->stats();
  for (size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(after.tiers[t].blocks, before.tiers[t].blocks);
    EXPECT_EQ(after.tiers[t].bytes, before.tiers[t].bytes);
  }
  for (auto& [i, b] : kept_) expect_bytes(*s, i);
}

TEST_F(TieredStoreTest, ABlockLargerThanTheHotBudgetGoesColdWithoutDemotions) {
  auto s = make(2, 8);
  put(*s, 0);
  put(*s, 1, 3 * kBlock);
  EXPECT_EQ(s->tier_of(key(0)), 0u);
  EXPECT_EQ(s->tier_of(key(1)), 1u);
  EXPECT_EQ(s->stats().tiers[0].demotions, 0u);
  expect_bytes(*s, 1);
}

TEST_F(TieredStoreTest, MisuseIsRefusedWithClearErrorsAndNoChange) {
  auto s = make(2, 8);
  put(*s, 0);
  put(*s, 1);
  std::string msg = error_of([&] { s->acquire(key(9)); }, Error::Kind::Internal);
  EXPECT_NE(msg.find("holds no block seq 0 layer 0 block 9"), std::string::npos) << msg;
  msg = error_of([&] { s->release(key(0)); }, Error::Kind::Internal);
  EXPECT_NE(msg.find("not acquired"), std::string::npos) << msg;
  {
    TieredStore::Pin p(*s, key(0));
    msg = error_of([&] { s->put(key(0), random_block(rng_, kBlock)); }, Error::Kind::Internal);
    EXPECT_NE(msg.find("block seq 0 layer 0 block 0 is acquired"), std::string::npos) << msg;
    msg = error_of([&] { s->erase(key(0)); }, Error::Kind::Internal);
    EXPECT_NE(msg.find("while it is acquired"), std::string::npos) << msg;
    msg = error_of([&] { s->erase_sequence(0); }, Error::Kind::Internal);
    EXPECT_NE(msg.find("block seq 0 layer 0 block 0 is acquired"), std::string::npos) << msg;
    EXPECT_EQ(s->stats().tiers[0].blocks, 2u);
  }
  for (auto& [i, b] : kept_) expect_bytes(*s, i);
  std::vector<std::unique_ptr<KVTier>> none;
  error_of([&] { TieredStore t(std::move(none)); }, Error::Kind::InvalidInput);
  std::vector<std::unique_ptr<KVTier>> remote_first;
  remote_first.push_back(std::make_unique<CopyOnlyTier>(0));
  msg = error_of([&] { TieredStore t(std::move(remote_first)); }, Error::Kind::InvalidInput);
  EXPECT_NE(msg.find("must be addressable"), std::string::npos) << msg;
}

TEST_F(TieredStoreTest, OverwriteAndEraseSequence) {
  auto s = make(2, 8);
  for (int64_t i = 0; i < 4; ++i) put(*s, i);  // blocks 0 1 cold
  put(*s, 0);                                   // same size: rewritten in place, stays cold
  EXPECT_EQ(s->tier_of(key(0)), 1u);
  expect_bytes(*s, 0);
  put(*s, 1, 100);                              // new size: placed afresh (hot, demoting LRU)
  EXPECT_EQ(s->tier_of(key(1)), 0u);
  expect_bytes(*s, 1);
  kept_[100] = random_block(rng_, kBlock);
  s->put({5, 1, 0}, kept_[100]);
  EXPECT_EQ(s->erase_sequence(0), 4u);
  EXPECT_FALSE(s->contains(key(2)));
  EXPECT_TRUE(s->contains({5, 1, 0}));
  auto st = s->stats();
  EXPECT_EQ(st.tiers[0].blocks + st.tiers[1].blocks, 1u);
  EXPECT_EQ(st.bytes(), kBlock);
  TieredStore::Pin p(*s, {5, 1, 0});
  EXPECT_EQ(std::memcmp(p.data(), kept_[100].data(), kBlock), 0);
}

TEST_F(TieredStoreTest, ARemoteTierIsReadByCopyAndPromotedWithDemotions) {
  std::vector<std::unique_ptr<KVTier>> tiers;
  tiers.push_back(std::make_unique<RamTier>(2 * kBlock));
  tiers.push_back(std::make_unique<FileTier>(dir_.path(), 2 * kBlock, 4096));
  tiers.push_back(std::make_unique<CopyOnlyTier>(0));
  TieredStore s(std::move(tiers));
  for (int64_t i = 0; i < 6; ++i) put(s, i);  // hot 4 5, file 2 3, remote 0 1
  EXPECT_EQ(s.tier_of(key(0)), 2u);
  EXPECT_EQ(s.tier_of(key(1)), 2u);
  EXPECT_EQ(s.tier_of(key(3)), 1u);
  auto st = s.stats();
  EXPECT_EQ(st.tiers[0].demotions, 4u);
  EXPECT_EQ(st.tiers[1].demotions, 2u);
  // No free room anywhere: hot LRU (4) goes to the file, the file's LRU (2) to the remote.
  TieredStore::Pin p0(s, key(0));
  EXPECT_EQ(s.tier_of(key(0)), 0u);
  EXPECT_EQ(s.tier_of(key(4)), 1u);
  EXPECT_EQ(s.tier_of(key(2)), 2u);
  EXPECT_EQ(std::memcmp(p0.data(), kept_[0].data(), kBlock), 0);
  TieredStore::Pin p5(s, key(5));  // hot now all pinned
  TieredStore::Pin p1(s, key(1));  // so block 1 comes into the file tier
  EXPECT_EQ(s.tier_of(key(1)), 1u);
  EXPECT_EQ(std::memcmp(p1.data(), kept_[1].data(), kBlock), 0);
  TieredStore::Pin p4(s, key(4));  // file now all pinned too
  std::string msg = error_of([&] { s.acquire(key(2)); }, Error::Kind::OutOfMemory);
  EXPECT_NE(msg.find("no room to bring block seq 0 layer 0 block 2 (64 bytes) from the remote tier"), std::string::npos)
      << msg;
  EXPECT_EQ(s.tier_of(key(2)), 2u);
  st = s.stats();
  EXPECT_EQ(st.tiers[2].promotions, 2u);
  EXPECT_EQ(st.tiers[2].hits, 0u);  // never read in place
  p0.reset();
  p5.reset();
  p1.reset();
  p4.reset();
  for (auto& [i, b] : kept_) expect_bytes(s, i);
}

// Random puts, overwrites, erases, acquires and releases over small budgets: after every step each
// budget holds, the tiers account for exactly the blocks the test put, and every pinned pointer
// still shows its bytes; every block reads back identical at the end.
void random_walk(TieredStore& s, std::mt19937_64& rng, int steps) {
  std::map<BlockKey, std::vector<uint8_t>> model;
  struct Held {
    BlockKey k;
    const uint8_t* p;
  };
  std::vector<Held> held;
  auto pins_of = [&](const BlockKey& k) {
    int n = 0;
    for (auto& h : held) n += h.k == k;
    return n;
  };
  const size_t sizes[] = {64, 128, 200};
  for (int step = 0; step < steps; ++step) {
    const BlockKey k{static_cast<int64_t>(rng() % 3), 0, static_cast<int64_t>(rng() % 16)};
    const int op = static_cast<int>(rng() % 10);
    if (op < 4) {
      auto bytes = random_block(rng, sizes[rng() % 3]);
      if (pins_of(k)) {
        EXPECT_THROW(s.put(k, bytes), Error);
      } else {
        try {
          s.put(k, bytes);
          model[k] = bytes;
        } catch (const Error& e) {
          ASSERT_EQ(static_cast<int>(e.kind()), static_cast<int>(Error::Kind::OutOfMemory)) << e.what();
          // A replacement of another size that found no room leaves the key absent.
          model.erase(k);
          ASSERT_FALSE(s.contains(k));
        }
      }
    } else if (op < 6) {
      if (model.count(k)) {
        const uint8_t* p = nullptr;
        try {
          p = s.acquire(k);
        } catch (const Error& e) {
          // Only a block that cannot be read in place may be refused (no room above for it).
          ASSERT_EQ(static_cast<int>(e.kind()), static_cast<int>(Error::Kind::OutOfMemory)) << e.what();
          ASSERT_FALSE(s.tier(s.tier_of(k)).addressable()) << e.what();
        }
        if (p) {
          ASSERT_EQ(std::memcmp(p, model[k].data(), model[k].size()), 0) << "step " << step;
          held.push_back({k, p});
        }
      }
    } else if (op < 9) {
      if (!held.empty()) {
        size_t i = rng() % held.size();
        s.release(held[i].k);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      }
    } else if (model.count(k)) {
      if (pins_of(k)) {
        EXPECT_THROW(s.erase(k), Error);
      } else {
        s.erase(k);
        model.erase(k);
      }
    }
    auto st = s.stats();
    size_t blocks = 0, bytes = 0;
    for (auto& t : st.tiers) {
      if (t.capacity_bytes) {
        ASSERT_LE(t.footprint_bytes, t.capacity_bytes) << t.name << " step " << step;
      }
      blocks += t.blocks;
      bytes += t.bytes;
    }
    size_t want_bytes = 0;
    for (auto& [mk, mb] : model) want_bytes += mb.size();
    ASSERT_EQ(blocks, model.size()) << "step " << step;
    ASSERT_EQ(bytes, want_bytes) << "step " << step;
    for (auto& h : held) ASSERT_EQ(std::memcmp(h.p, model[h.k].data(), model[h.k].size()), 0) << "step " << step;
  }
  for (auto& h : held) s.release(h.k);
  for (auto& [mk, mb] : model) {
    TieredStore::Pin p(s, mk);
    ASSERT_EQ(s.size_of(mk), mb.size());
    EXPECT_EQ(std::memcmp(p.data(), mb.data(), mb.size()), 0) << to_string(mk);
  }
}

TEST_F(TieredStoreTest, BytesSurviveRandomMovesWithinBudgets) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto s = make(8, 48);  // 512 hot bytes and 3072 cold for up to 48 blocks of 64..200 bytes
    std::mt19937_64 rng(seed);
    random_walk(*s, rng, 3000);
    auto st = s->stats();
    // The walk really moved blocks both ways and read cold blocks in place.
    EXPECT_GT(st.tiers[0].demotions, 0u);
    EXPECT_GT(st.tiers[1].promotions, 0u);
    EXPECT_GT(st.tiers[1].hits, 0u);
  }
}

TEST_F(TieredStoreTest, BytesSurviveRandomMovesThroughThreeTiers) {
  std::vector<std::unique_ptr<KVTier>> tiers;
  tiers.push_back(std::make_unique<RamTier>(6 * kBlock));
  tiers.push_back(std::make_unique<FileTier>(dir_.path(), 16 * kBlock, 4096));
  tiers.push_back(std::make_unique<CopyOnlyTier>(0));
  TieredStore s(std::move(tiers));
  std::mt19937_64 rng(11);
  random_walk(s, rng, 3000);
  auto st = s.stats();
  EXPECT_GT(st.tiers[1].demotions, 0u);
  EXPECT_GT(st.tiers[2].promotions, 0u);
}

TEST_F(TieredStoreTest, ConcurrentReadersSeeExactBytesWhileAWriterMovesBlocks) {
  auto s = make(4, 64);
  for (int64_t i = 0; i < 16; ++i) put(*s, i);
  std::map<int64_t, std::vector<uint8_t>> writer_blocks;
  for (int64_t i = 16; i < 24; ++i) writer_blocks[i] = random_block(rng_, kBlock);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 r(100 + static_cast<uint64_t>(t));
      for (int n = 0; n < 2000; ++n) {
        int64_t i = static_cast<int64_t>(r() % 16);
        TieredStore::Pin p(*s, key(i));
        if (std::memcmp(p.data(), kept_.at(i).data(), kBlock) != 0) ++bad;
      }
    });
  // The writer's puts demote readers' unpinned blocks; its erases make hot room for promotions.
  threads.emplace_back([&] {
    for (int n = 0; n < 2000; ++n) {
      int64_t i = 16 + n % 8;
      if (n % 16 < 8) s->put(key(i), writer_blocks[i]);
      else s->erase(key(i));
    }
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto st = s->stats();
  EXPECT_EQ(st.acquires, 6000u);
  EXPECT_GT(st.tiers[0].demotions, 0u);
  for (auto& [i, b] : kept_) expect_bytes(*s, i);
}

TEST_F(TieredStoreTest, NothingIsLeftOnDiskAfterTheStoreGoes) {
  std::filesystem::path path;
  {
    auto s = make(1, 8);
    for (int64_t i = 0; i < 4; ++i) put(*s, i);
    path = static_cast<const FileTier&>(s->tier(1)).path();
    EXPECT_EQ(test::open_descriptors_to(path), 1u);
  }
  EXPECT_EQ(dir_.entries(), 0u);
  EXPECT_EQ(test::open_descriptors_to(path), 0u);
}

}  // namespace
}  // namespace folio
