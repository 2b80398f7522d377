// ReferenceSnapshot: a copy, outside the KV pool, of the leading reference segments of a sequence,
// so that another sequence with the same reference prefix starts from them instead of prefilling
// (reference reuse across requests, see runtime/prefix_kv_cache.h).
//
// It holds the segments' blocks byte for byte (codes and group parameters included) together with
// what SequenceKV needs to rebuild them exactly: segment lengths, block sizes and storage types, and
// the sparse unit starts inside each segment. Positions are implied: restored segments take
// positions 0, 1, ... in order, as the original did. Immutable once made; share it freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_layout.h"

namespace folio {

struct ReferenceSnapshot {
  struct Block {
    int64_t tokens = 0;  // capacity in rows, as allocated
    KVDType k = KVDType::F32, v = KVDType::F32;
    std::vector<uint8_t> bytes;  // the whole block: K, V and their parameters
  };
  struct Segment {
    int64_t length = 0;                      // reference tokens
    std::vector<int64_t> unit_starts;        // rows (from the segment start) where a sparse unit starts
    std::vector<std::vector<Block>> layers;  // [layer] -> blocks in row order
  };

  KVTypes types;             // the pool's storage types when it was taken
  int64_t n_layers = 0;
  int64_t block_tokens = 0;  // rows per block of the sequence it came from
  std::vector<Segment> segments;

  // Tokens of the first `count` segments.
  int64_t tokens(size_t count) const {
    int64_t t = 0;
    for (size_t i = 0; i < count && i < segments.size(); ++i) t += segments[i].length;
    return t;
  }
  // Bytes it holds (blocks only; the bookkeeping is negligible).
  size_t bytes() const {
    size_t b = 0;
    for (const Segment& s : segments)
      for (const auto& layer : s.layers)
        for (const Block& blk : layer) b += blk.bytes.size();
    return b;
  }
};

}  // namespace folio
