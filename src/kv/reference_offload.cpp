#include "kv/reference_offload.h"

namespace folio {

void ReferenceOffload::move_out(size_t segment, std::vector<std::vector<int64_t>>& blocks) {
  if (cold_.size() <= segment) cold_.resize(segment + 1);
  ColdLayers& cold = cold_[segment];
  cold.assign(blocks.size(), {});
  try {
    for (size_t l = 0; l < blocks.size(); ++l)
      for (int64_t id : blocks[l]) {
        const KVBlock& b = pool_.block(id);
        ColdBlock c;
        c.key = {id_, static_cast<int64_t>(l), next_block_++};
        c.meta = b;
        c.meta.k = c.meta.v = nullptr;
        c.meta.k_params = c.meta.v_params = nullptr;
        store_->put(c.key, std::span<const uint8_t>(b.k, b.bytes));
        bytes_ += b.bytes;
        cold[l].push_back(c);
      }
  } catch (...) {
    // All or nothing: the blocks stay in the pool.
    erase(segment);
    throw;
  }
  for (auto& layer : blocks) {
    for (int64_t id : layer) pool_.release(id);
    layer.clear();
  }
}

void ReferenceOffload::erase(size_t segment) {
  if (segment >= cold_.size()) return;
  ColdLayers& cold = cold_[segment];
  for (auto& layer : cold)
    for (const ColdBlock& c : layer) {
      store_->erase(c.key);
      bytes_ -= c.meta.bytes;
    }
  cold.clear();
}

KVBlock ReferenceOffload::block(size_t segment, size_t layer, size_t i, bool pin) const {
  const ColdBlock& c = cold_[segment][layer][i];
  if (!pin) return c.meta;
  uint8_t* base;
  {
    std::lock_guard lk(pin_mu_);
    auto it = pinned_.find(c.key);
    if (it == pinned_.end()) it = pinned_.emplace(c.key, store_->acquire(c.key)).first;
    base = const_cast<uint8_t*>(it->second);
  }
  return place_block(pool_.layout(), base, c.meta.tokens, c.meta.k_type, c.meta.v_type);
}

void ReferenceOffload::release_pins() const {
  std::lock_guard lk(pin_mu_);
  for (const auto& [key, ptr] : pinned_) store_->release(key);
  pinned_.clear();
}

}  // namespace folio
