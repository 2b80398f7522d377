// Quantised KV storage fills a group of kKVKeyGroup tokens in a staging block, then quantises the
// group into its final block at once (keys per channel over the group's tokens, KIVI-style):
// quantize_staged_rows does that step. The staging block holds keys as q8 per token
// (KVFootprint::stage_key_type) and values already in their stored type (quantised values are per token, in groups of the layout's value_group
// channels, so each is final when written; staging them in f16 would cost the window 4x a q4 row).
// Pure: it reads `stage` and writes `dst`, nothing else; callers serialise writes to one block.
#pragma once

#include <cstdint>

#include "kv/block_pool.h"
#include "kv/kv_layout.h"

namespace folio {

// Quantises (or copies, for a float type) the first `rows` keys of the staging block `stage` into
// `dst`, whose key type says how they are stored, and copies the values as they are. Precondition:
// rows <= kKVKeyGroup, both blocks hold at least `rows` rows of the layout's geometry, and they
// store values in the same type (else Error(Internal)).
void quantize_staged_rows(const KVLayout& layout, const KVBlock& stage, int64_t rows, const KVBlock& dst);

}  // namespace folio
