#include "server/remote_prefix.h"

#include <memory>

#include "core/content_hash.h"
#include "runtime/prefix_entry_codec.h"

namespace folio {

std::string remote_prefix_key(const std::string& layout_id, const std::string& chain_key) {
  Sha256 h;
  h.field(layout_id).field(chain_key);
  return h.hex();
}

PrefixKVCache::Entry prefix_entry_part(const PrefixKVCache::Entry& entry, size_t i) {
  PrefixKVCache::Entry part;
  part.keys = {entry.keys.at(i)};  // a chain key names every part before it too
  auto kv = std::make_shared<ReferenceSnapshot>();
  kv->types = entry.kv->types;
  kv->n_layers = entry.kv->n_layers;
  kv->block_tokens = entry.kv->block_tokens;
  kv->segments.push_back(entry.kv->segments.at(i));
  part.bytes = kv->bytes();
  part.kv = std::move(kv);
  if (i + 1 == entry.keys.size()) part.logits = entry.logits;
  return part;
}

void put_remote_prefix(RemoteReferenceTier& tier, const std::string& layout_id, const PrefixKVCache::Entry& entry) {
  tier.put_later("kv", [entry, layout_id](const RemoteReferenceTier::PutOne& put) {
    for (size_t i = 0; i < entry.keys.size(); ++i)
      put(remote_prefix_key(layout_id, entry.keys[i]), encode_prefix_entry(prefix_entry_part(entry, i)));
  });
}

std::optional<PrefixKVCache::Entry> take_remote_prefix(RemoteReferenceTier& tier, const std::string& layout_id,
                                                       const std::vector<std::string>& chain_keys) {
  std::optional<PrefixKVCache::Entry> joined;
  std::shared_ptr<ReferenceSnapshot> kv;
  for (size_t i = 0; i < chain_keys.size(); ++i) {
    const std::optional<std::string> payload = tier.get("kv", remote_prefix_key(layout_id, chain_keys[i]));
    if (!payload) break;
    std::optional<PrefixKVCache::Entry> part = decode_prefix_entry(*payload);
    if (!part || part->keys != std::vector<std::string>{chain_keys[i]}) break;
    if (!joined) {
      joined.emplace();
      kv = std::make_shared<ReferenceSnapshot>(*part->kv);
    } else {
      if (part->kv->types.name() != kv->types.name() || part->kv->types.rotated != kv->types.rotated ||
          part->kv->n_layers != kv->n_layers || part->kv->block_tokens != kv->block_tokens)
        break;
      kv->segments.push_back(part->kv->segments.front());
    }
    joined->keys.push_back(chain_keys[i]);
    joined->logits = std::move(part->logits);
  }
  if (!joined) return std::nullopt;
  if (joined->keys.size() != chain_keys.size()) joined->logits.clear();
  joined->bytes = kv->bytes() + joined->logits.size() * sizeof(float);
  joined->kv = std::move(kv);
  return joined;
}

}  // namespace folio
