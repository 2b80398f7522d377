// RamTier: KV blocks on the heap under a byte budget (the hot tier).
//
// Each block is its own 64-byte aligned allocation, so view() pointers stay put while other blocks
// come and go. The footprint is the sum of block sizes rounded up to 64 bytes (what is allocated).
#pragma once

#include <cstdlib>
#include <memory>
#include <unordered_map>

#include "kv/kv_tier.h"

namespace folio {

class RamTier final : public KVTier {
 public:
  // capacity_bytes == 0 means unlimited.
  explicit RamTier(size_t capacity_bytes);

  std::string name() const override { return "ram"; }
  std::string location() const override { return "RAM"; }
  size_t capacity_bytes() const override { return capacity_; }
  size_t bytes_in_use() const override { return bytes_; }
  size_t footprint_bytes() const override { return footprint_; }
  size_t block_count() const override { return blocks_.size(); }
  bool addressable() const override { return true; }

  bool can_put(size_t bytes) const override;
  bool contains(const BlockKey& key) const override { return blocks_.count(key) != 0; }
  size_t size_of(const BlockKey& key) const override;

  void put(const BlockKey& key, std::span<const uint8_t> bytes) override;
  void get(const BlockKey& key, std::span<uint8_t> out) const override;
  const uint8_t* view(const BlockKey& key) const override;
  void erase(const BlockKey& key) override;

 private:
  struct Free {
    void operator()(uint8_t* p) const noexcept { std::free(p); }
  };
  struct Block {
    std::unique_ptr<uint8_t, Free> mem;
    size_t size = 0;
  };
  static size_t rounded(size_t bytes) { return (bytes + 63) / 64 * 64; }
  const Block& find(const BlockKey& key) const;

  size_t capacity_;
  size_t bytes_ = 0;
  size_t footprint_ = 0;
  std::unordered_map<BlockKey, Block, BlockKeyHash> blocks_;
};

}  // namespace folio
