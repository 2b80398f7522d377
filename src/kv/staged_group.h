// Quantised KV storage fills a group of kKVKeyGroup tokens in an f16 staging block, then quantises
// the group into its final block at once (keys per channel over the group's tokens, values per token
// in groups of the layout's value_group channels, KIVI-style): quantize_staged_rows does that step.
// Pure: it reads `stage` and writes `dst`, nothing else; callers serialise writes to one block.
#pragma once

#include <cstdint>

#include "kv/block_pool.h"
#include "kv/kv_layout.h"

namespace folio {

// Quantises (or copies, for a float type) the first `rows` rows of the staging block `stage` into
// `dst`, whose types say how each of K and V is stored. Precondition: rows <= kKVKeyGroup and both
// blocks hold at least `rows` rows of the layout's geometry.
void quantize_staged_rows(const KVLayout& layout, const KVBlock& stage, int64_t rows, const KVBlock& dst);

}  // namespace folio
