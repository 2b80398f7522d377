// Reference KV between replicas, one remote value per part (a page, the prompt): part i of a
// prefix-cache entry is stored under the chain key of parts 0..i (a chain key names every part
// before it, as the part's KV depends on them all), holding that part's segment alone, plus the
// last logits on the last part of a whole reference.
//
// Why per part: a whole reference's KV grows with its pages (a 40-page Unlimited-OCR pass holds
// ~680 MB in bf16, above Redis's 512 MB value limit) while one page stays ~17 MB; and a request that
// shares only its first pages with another finds those (take_remote_prefix returns the leading
// parts it finds, and the scheduler prefills the rest).
//
// Threads: put_remote_prefix only queues (the values are serialised on the tier's writer thread);
// take_remote_prefix makes one Redis round trip per part, on the calling thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/prefix_kv_cache.h"
#include "server/remote_reference_tier.h"

namespace folio {

// The remote key of the part whose chain key is `chain_key`, for KV laid out as `layout_id`
// (Scheduler::prefix_layout_id(): storage types, rotation, block size, policy).
std::string remote_prefix_key(const std::string& layout_id, const std::string& chain_key);

// Part i of `entry` on its own: its chain key, its segment, the logits if it is the last part.
PrefixKVCache::Entry prefix_entry_part(const PrefixKVCache::Entry& entry, size_t i);

// Queues every part of `entry` for the remote tier (kind "kv"), in one write job.
void put_remote_prefix(RemoteReferenceTier& tier, const std::string& layout_id, const PrefixKVCache::Entry& entry);

// The longest leading run of `chain_keys`' parts found remotely, joined into one entry (logits if
// it covers them all and the last part has them); nullopt when the first part is missing. A part
// that is missing, corrupt or does not chain ends the run.
std::optional<PrefixKVCache::Entry> take_remote_prefix(RemoteReferenceTier& tier, const std::string& layout_id,
                                                       const std::vector<std::string>& chain_keys);

}  // namespace folio
