// KVFootprint: the pool bytes of one sequence's regions, per layer, for a pool layout, a policy and a
// block size. It is the one byte formula of the cache: SequenceKV::append reserves by it and
// worst_case_bytes (what admission reserves) adds it up, so the two cannot drift apart.
//
// Regions: reference blocks of block_tokens() rows (one key group when the reference is quantised),
// the staging block of a quantised reference's group being filled (q8 keys per token), and the window: a
// ring of W rows (quantised keys kept per token, so no staging). Pure arithmetic over the layout;
// any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/block_pool.h"
#include "kv/kv_policy.h"

namespace folio {

class KVFootprint {
 public:
  // block_tokens: rows per float reference block (>= 1; ignored when the reference is quantised).
  KVFootprint(const KVBlockPool& pool, const KVPolicy& policy, int64_t block_tokens);

  // The type of a staging block's keys for a reference whose keys are stored as t: q8 kept per token
  // when t is quantised (requantised per channel when the group completes), else t. A staging
  // block's values are stored in their region's type.
  static KVDType stage_key_type(KVDType t);
  static constexpr KeyScales kStageKeyScales = KeyScales::PerToken;

  bool reference_quantized() const { return ref_quantized_; }
  bool window_quantized() const { return win_quantized_; }
  int64_t block_tokens() const { return block_tokens_; }
  // How the window's quantised keys keep their scales: per token (kv_layout.h).
  static constexpr KeyScales kWindowKeyScales = KeyScales::PerToken;

  size_t reference_block() const;  // one reference block
  size_t reference_stage() const;  // the staging block of a quantised reference (0 when not quantised)
  size_t window() const;           // the window's ring: one block of W rows
  // A segment of `rows` rows being filled: whole blocks, plus the staging block when quantised.
  size_t open_segment(int64_t rows) const;
  // A closed segment: its partial last block (or quantised group) is re-allocated to its rows.
  size_t closed_segment(int64_t rows) const;

  // The most pool bytes a sequence (SequenceKV) can hold with reference segments of `segments`
  // tokens (in order) and `generated` generated tokens stored, under `policy`, in `pool`'s layout
  // with `block_tokens` rows per float block: what admission reserves. An upper bound on the
  // sequence's bytes at every moment. reference_offloaded: the sequence moves every complete
  // segment to a store (SequenceKV's reference_store), so the pool holds only the segment being
  // filled (under `full`, the last one and the output) and the window.
  static size_t worst_case_bytes(const KVBlockPool& pool, const KVPolicy& policy, int64_t block_tokens,
                                 std::span<const int64_t> segments, int64_t generated, bool reference_offloaded = false);

 private:
  const KVBlockPool& pool_;
  KVPolicy policy_;
  bool ref_quantized_, win_quantized_;
  int64_t block_tokens_;
};

}  // namespace folio
