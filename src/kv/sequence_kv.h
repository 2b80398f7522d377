// SequenceKV: one sequence's keys and values in every layer, laid out by its KV policy.
//
// Positions are absolute and only grow: the token appended n-th sits at position n, whatever was
// evicted (RoPE is applied before storing, so cached keys are never re-rotated).
//   - Reference tokens (the first prefill, possibly in several chunks) go into fixed-size blocks that
//     stay pinned until the sequence ends.
//   - Generated tokens: under `full` they keep filling blocks; under `rswa` generated token j lands in
//     slot j % W of a ring of W rows per layer, overwriting the token that left the window.
//
// Quantised storage (KVTypes in the pool's layout): a quantised region (the reference, or the
// window) is cut into groups of kKVKeyGroup tokens. The group being filled lives in an f16 staging
// block and is quantised into its final block the moment it completes; a reference that ends inside
// a group has that last group quantised when generation starts. A quantised window keeps
// ceil(W / G) quantised groups in a ring plus the staging group, and shows exactly the last W tokens
// like the float ring does. Under `full`, generated tokens are stored like the reference.
//
// Model code stores a token's K/V rows (store), then asks for the spans visible to a query at that
// position and hands them to kernels::attend. Within one layer, tokens must be stored in position
// order, and under rswa each generated token attended before the next is stored, which is what
// makes the ring exact even when a chunk is longer than the window.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kv/block_pool.h"
#include "kv/kv_policy.h"

namespace folio {

class SequenceKV {
 public:
  SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens = 16);
  ~SequenceKV();
  SequenceKV(const SequenceKV&) = delete;
  SequenceKV& operator=(const SequenceKV&) = delete;

  // Reserves storage in every layer for n more tokens and returns the position of the first.
  // reference == true extends the reference (an error once generation started); false appends
  // generated tokens and seals the reference. Throws Error(OutOfMemory) if the pool is full (nothing
  // is reserved then).
  int64_t append(int64_t n, bool reference);

  // A point to return to: rollback(mark()) undoes later appends (their storage stays reserved and
  // is reused by the next append). Only valid before anything is stored at the undone positions.
  struct Mark {
    int64_t length, reference_len;
    bool sealed;
  };
  Mark mark() const { return {length_, reference_len_, sealed_}; }
  void rollback(const Mark& m) {
    length_ = m.length;
    reference_len_ = m.reference_len;
    sealed_ = m.sealed;
  }

  // Stores the keys and values of the token at `pos` in `layer`: k and v are its f32 rows
  // ([n_kv_heads * head_dim], rotated keys), converted or quantised into the storage types.
  void store(int64_t layer, int64_t pos, const float* k, const float* v);

  // Where the token at `pos` keeps its K and V in `layer` when they are stored as floats (not in a
  // quantised region): KV head h at k + h * head_stride (V likewise), head_dim elements each. pos
  // must be appended; under rswa a generated position shares its ring row with pos +- k*W.
  struct Row {
    uint8_t* k;
    uint8_t* v;
    size_t head_stride;
  };
  Row row(int64_t layer, int64_t pos) const;

  // Spans a query at position `pos` may attend to (cached tokens at positions <= pos), appended to out.
  void visible_spans(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out) const;
  // Bytes of K and V (codes and group parameters) a query at `pos` reads over all layers.
  size_t visible_bytes(int64_t pos) const;

  SeqId id() const { return id_; }
  const KVPolicy& policy() const { return policy_; }
  const KVLayout& layout() const { return pool_.layout(); }
  int64_t length() const { return length_; }                   // next position
  int64_t reference_length() const { return reference_len_; }  // P
  int64_t generated_length() const { return length_ - reference_len_; }
  bool reference_sealed() const { return sealed_; }
  // Tokens currently held per layer (P + min(generated, W) under rswa).
  int64_t cached_tokens() const;
  // Rows per reference block (kKVKeyGroup when the reference is quantised).
  int64_t block_tokens() const { return block_tokens_; }
  // Bytes this sequence holds in the pool (from the pool's counters).
  size_t bytes() const { return pool_.bytes_for(id_); }

 private:
  void release_all();
  bool in_blocks(int64_t pos) const { return pos < reference_len_ || policy_.kind == KVPolicyKind::Full; }
  bool blocks_quantized() const;
  bool window_quantized() const;
  // Quantises the staging group of `layer` (rows [0, rows)) into block `dst`.
  void quantize_stage(int64_t layer, int64_t rows, int64_t dst);
  kernels::KVSpan span_of(const KVBlock& b, int64_t first_row, int64_t rows) const;

  KVBlockPool& pool_;
  SeqId id_;
  KVPolicy policy_;
  int64_t block_tokens_;
  int64_t length_ = 0;
  int64_t reference_len_ = 0;
  bool sealed_ = false;
  // [layer] -> block ids holding positions [i*block_tokens, (i+1)*block_tokens) (reference, and
  // generated tokens under `full`).
  std::vector<std::vector<int64_t>> blocks_;
  // [layer] -> the window: one ring block of W rows (float window), or ceil(W/G) quantised groups,
  // group k in slot k % size (quantised window); empty until generation starts.
  std::vector<std::vector<int64_t>> ring_;
  // [layer] -> f16 staging block of the group being filled in a quantised region, or -1.
  std::vector<int64_t> stage_;
  // [layer] -> positions below this are quantised (blocks) / generated tokens below this are
  // quantised (window).
  std::vector<int64_t> block_done_, window_done_;
};

}  // namespace folio
