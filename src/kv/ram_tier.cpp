#include "kv/ram_tier.h"

#include <cstring>

#include "core/error.h"

namespace folio {

RamTier::RamTier(size_t capacity_bytes) : capacity_(capacity_bytes) {}

bool RamTier::can_put(size_t bytes) const { return capacity_ == 0 || footprint_ + rounded(bytes) <= capacity_; }

const RamTier::Block& RamTier::find(const BlockKey& key) const {
  auto it = blocks_.find(key);
  if (it == blocks_.end()) throw_missing(key);
  return it->second;
}

size_t RamTier::size_of(const BlockKey& key) const { return find(key).size; }

void RamTier::put(const BlockKey& key, std::span<const uint8_t> bytes) {
  if (bytes.empty()) throw Error(Error::Kind::Internal, "KV ram tier: empty block " + to_string(key));
  auto it = blocks_.find(key);
  const size_t old_footprint = it == blocks_.end() ? 0 : rounded(it->second.size);
  if (it != blocks_.end() && old_footprint == rounded(bytes.size())) {
    // Same allocation size: overwrite in place (no allocation, cannot fail).
    std::memcpy(it->second.mem.get(), bytes.data(), bytes.size());
    bytes_ = bytes_ - it->second.size + bytes.size();
    it->second.size = bytes.size();
    return;
  }
  const size_t need = rounded(bytes.size());
  if (capacity_ != 0 && footprint_ - old_footprint + need > capacity_)
    throw Error(Error::Kind::OutOfMemory, "KV ram tier (RAM) full: " + std::to_string(footprint_) + " of " +
                                              std::to_string(capacity_) + " bytes in use, block " +
                                              to_string(key) + " needs " + std::to_string(need));
  std::unique_ptr<uint8_t, Free> mem(static_cast<uint8_t*>(std::aligned_alloc(64, need)));
  if (!mem)
    throw Error(Error::Kind::OutOfMemory, "KV ram tier: system allocation of " + std::to_string(need) + " bytes failed");
  std::memcpy(mem.get(), bytes.data(), bytes.size());
  if (it != blocks_.end()) {
    bytes_ -= it->second.size;
    footprint_ -= old_footprint;
    it->second = Block{std::move(mem), bytes.size()};
  } else {
    blocks_.emplace(key, Block{std::move(mem), bytes.size()});
  }
  bytes_ += bytes.size();
  footprint_ += need;
}

void RamTier::get(const BlockKey& key, std::span<uint8_t> out) const {
  const Block& b = find(key);
  check_get_size(key, b.size, out.size());
  std::memcpy(out.data(), b.mem.get(), b.size);
}

const uint8_t* RamTier::view(const BlockKey& key) const { return find(key).mem.get(); }

void RamTier::erase(const BlockKey& key) {
  auto it = blocks_.find(key);
  if (it == blocks_.end()) throw_missing(key);
  bytes_ -= it->second.size;
  footprint_ -= rounded(it->second.size);
  blocks_.erase(it);
}

}  // namespace folio
