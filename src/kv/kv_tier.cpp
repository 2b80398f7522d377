#include "kv/kv_tier.h"

#include "core/error.h"

namespace folio {

std::string to_string(const BlockKey& key) {
  return "seq " + std::to_string(key.seq) + " layer " + std::to_string(key.layer) + " block " +
         std::to_string(key.block);
}

size_t BlockKeyHash::operator()(const BlockKey& k) const noexcept {
  // Mix the three fields (splitmix64 finaliser) so nearby keys spread over buckets.
  uint64_t h = static_cast<uint64_t>(k.seq) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(k.layer) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(k.block) + 0x94D049BB133111EBull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  return static_cast<size_t>(h);
}

void KVTier::throw_missing(const BlockKey& key) const {
  throw Error(Error::Kind::Internal, "KV " + name() + " tier holds no block " + to_string(key));
}

void KVTier::check_get_size(const BlockKey& key, size_t held, size_t requested) const {
  if (held != requested)
    throw Error(Error::Kind::Internal, "KV " + name() + " tier: block " + to_string(key) + " is " +
                                          std::to_string(held) + " bytes, " + std::to_string(requested) +
                                          " requested");
}

}  // namespace folio
