// block_rows: a KV block's rows as plain f32, in and out, whatever its storage types.
//
// read_block_rows() decodes the first `rows` rows of a block (float rows converted, quantised keys
// and values dequantised) into head-major f32 arrays; write_block_rows() stores head-major f32 rows
// into a block, converting to a float type or quantising (keys per channel over the rows given, or
// per token in a block that keeps them so, values per token in the layout's value groups, which may
// span two heads: kv_quant.h). Writing
// what was read gives the same bytes back for float types; quantised ones round once more.
// Pure functions of their arguments: they touch only the arrays and the block named; callers
// serialise writes to one block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kv/block_pool.h"
#include "kv/kv_layout.h"

namespace folio {

// k and v: [n_kv_heads][rows][head_dim] each. Precondition: rows <= block.tokens, and for keys
// quantised per channel the rows are the block's whole key group (its parameters cover them all).
void read_block_rows(const KVLayout& layout, const KVBlock& block, int64_t rows, float* k, float* v);

// Precondition: rows <= block.tokens; for keys quantised per channel, the block holds exactly one
// key group (at most kKVKeyGroup rows), all written by this call.
void write_block_rows(const KVLayout& layout, const float* k, const float* v, int64_t rows, const KVBlock& block);

// The keys alone, as read_block_rows and write_block_rows treat them (k: [n_kv_heads][rows][head_dim]),
// with the same preconditions.
void read_key_rows(const KVLayout& layout, const KVBlock& block, int64_t rows, float* k);
void write_key_rows(const KVLayout& layout, const float* k, int64_t rows, const KVBlock& block);

// Stores one token's keys (k: [n_kv_heads x head_dim]) as row `row` of the block, converted or
// quantised per token; Error(Internal) for keys scaled per channel (a group is quantised whole).
// Precondition: row < block.tokens.
void write_key_row(const KVLayout& layout, const float* k, int64_t row, const KVBlock& block);

// Stores one token's values (v: [n_kv_heads x head_dim]) as row `row` of the block, converted or
// quantised per token as write_block_rows would: values need no other row, so a quantised row can
// be written the moment it is known. Precondition: row < block.tokens.
void write_value_row(const KVLayout& layout, const float* v, int64_t row, const KVBlock& block);

// A segment's rows: `length` rows in blocks of block_tokens rows (block(i) gives block i, readable
// while the call runs), read into head-major k and v ([n_kv_heads][length][head_dim]), resized.
void read_segment_rows(const KVLayout& layout, int64_t block_tokens, int64_t length, const std::function<KVBlock(size_t)>& block,
                       std::vector<float>& k, std::vector<float>& v);

// New blocks of sequence `seq` in `layer` (of block_tokens rows, the last one just its rows) holding,
// per KV head h, the rows keep[h] (ascending, all of one count) of read_segment_rows' k and v for a
// segment of `length` rows. Returns their ids. Precondition: the pool can take them.
std::vector<int64_t> write_kept_rows(KVBlockPool& pool, SeqId seq, int64_t layer, int64_t block_tokens, int64_t length,
                                     const std::vector<std::vector<int64_t>>& keep, const std::vector<float>& k,
                                     const std::vector<float>& v);

// Rows [first_row, first_row + rows) of a block as attention reads them (kernels::attend).
kernels::KVSpan block_span(const KVLayout& layout, const KVBlock& block, int64_t first_row, int64_t rows);
// Bytes of K and V (codes and their parameters) a span holds over every KV head.
size_t span_bytes(const KVLayout& layout, const kernels::KVSpan& span);

// Copies the first `rows` value rows (codes or elements, and per-token parameters) from `src` to
// `dst`, which store values in the same type. Precondition: rows <= both blocks' tokens.
void copy_value_rows(const KVLayout& layout, const KVBlock& src, int64_t rows, const KVBlock& dst);

}  // namespace folio
