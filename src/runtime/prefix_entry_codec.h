// Bytes of a PrefixKVCache::Entry (chain keys, reference KV snapshot, last logits), so that replicas
// can hand reference KV to each other through the remote tier (server/remote_reference_tier.h).
//
// decode_prefix_entry() checks only the structure (every length inside the bytes, counts that agree
// with each other); whether the snapshot fits a given pool (layer count, block size, storage types,
// each block's byte size) is prefix_entry_fits()'s question, asked by the scheduler that owns the
// pool before it keeps an offered entry. Both refuse (nullopt / false) rather than throw.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kv/block_pool.h"
#include "runtime/prefix_kv_cache.h"

namespace folio {

std::string encode_prefix_entry(const PrefixKVCache::Entry& entry);
std::optional<PrefixKVCache::Entry> decode_prefix_entry(std::string_view bytes);

// Whether restoring every segment of `entry` into sequences of `pool` with `block_tokens` rows per
// block is exact: same layer count, block size and reference storage types, every block the size
// the pool gives its rows and types, every segment's blocks covering its length, `vocab` logits
// (or none).
bool prefix_entry_fits(const PrefixKVCache::Entry& entry, const KVBlockPool& pool, int64_t block_tokens, int64_t vocab);

}  // namespace folio
