// SequenceKV: one sequence's keys and values in every layer, laid out by its KV policy.
//
// Positions are absolute and only grow: the token appended n-th sits at position n, whatever was
// evicted or dropped (RoPE is applied before storing, so cached keys are never re-rotated, and
// positions are never re-based).
//   - Reference tokens go into segments (begin_segment starts one, e.g. per page), each stored in
//     fixed-size blocks from its first position, pinned until the sequence ends (or, under
//     `rolling`, until drop_segment). When the next segment or generation starts, a float
//     segment's partial last block is re-allocated to just its rows (a page rarely ends on a
//     block boundary, and blocks are long: kDefaultBlockTokens).
//   - Generated tokens: under `full` they extend the last segment; otherwise generated token j (the
//     j-th generated, whatever its position) lands in slot j % W of a ring of W rows per layer,
//     overwriting the token that left the window.
//   - Under `rolling`, reference segments may also be appended after generation started (pages
//     entering ahead of the decoder); they take the next positions, after the generated tokens
//     before them.
//
// Quantised storage (KVTypes in the pool's layout): a quantised reference segment is cut into
// groups of kKVKeyGroup tokens (keys scaled per channel over the group, KIVI-style). The group being
// filled lives in a staging block (keys in q8 per token) and is quantised into its final block the moment it
// completes; a segment that ends inside a group has that last group quantised when the next segment
// or generation starts. The window's ring quantises each row as it is written, keys per token like
// values (kv_quant.h): it holds exactly W rows, with no staging group beside it.
//
// Compressed reference (KVPolicy::keep < 1, SnapKV): the decoder hands observe_query() the query
// of every reference token it stores; the last policy.observe of them per layer are kept. When
// generation starts, they score every reference row per layer and KV head (reference_compression.h)
// and each segment without observed tokens keeps its best ceil(keep * length) rows per KV head: the
// rows are gathered into new blocks (row i of one head is then not the same token as row i of
// another; attention does not care, keys carry their positions in RoPE already), the old blocks go
// back to the pool, and no query reads a dropped row again. A reference restored whole (nothing
// observed) is kept whole. Quantised segments are dequantised, gathered and quantised again.
//
// Tiered reference (a reference_store given at construction): a reference segment, once complete, leaves the pool for a
// TieredStore (hot RAM, cold mapped file, LRU between them), byte for byte. A query then pins the
// blocks it reads (the selected ones under `sparse`) until the ReadScope around the reads ends
// (the decoder opens one per layer); the store may move an unpinned block between tiers at any time.
// The pool keeps only the segment being filled and the window.
//
// SequenceKV keeps the storage (positions, segments, the ring); what each idea needs lives in its
// own class, which owns its state: the policy's answers (policy_rules.h), the byte formula for
// append and admission (kv_footprint.h), the sparse policy's units, bounds and focus
// (sparse_selection.h), reference compression's observed queries and kept rows
// (reference_compression.h), a staged group's quantisation (staged_group.h), and the segments in a
// store with their read pins (reference_offload.h). Snapshot and restore are in
// sequence_kv_snapshot.cpp.
//
// Model code stores a token's K/V rows (store), then asks for the spans a query at that position
// reads and hands them to kernels::attend. Within one layer, tokens must be stored in position
// order, and under a window each generated token attended before the next is stored, which is
// what makes the ring exact even when a chunk is longer than the window.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kv/block_pool.h"
#include "kv/kv_footprint.h"
#include "kv/kv_policy.h"
#include "kv/policy_rules.h"
#include "kv/reference_compression.h"
#include "kv/reference_offload.h"
#include "kv/reference_snapshot.h"
#include "kv/sparse_selection.h"
#include "kv/tiered_store.h"

namespace folio {

// Rows per float reference block unless a caller chooses. A decode step reads each KV head's rows
// of a block as one run (block_pool.h's layout is head-major inside a block), and short runs are
// what the hardware prefetcher loses (128 rows against 16: docs/measurements.md). Segments give
// back their partial last block when they close, so long blocks cost no memory per page.
inline constexpr int64_t kDefaultBlockTokens = 128;

class SequenceKV {
 public:
  // reference_store: when set, every complete reference segment moves from the pool into this
  // store, which must outlive the sequence (under `full` the last segment, shared with the output,
  // stays in the pool).
  SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens = kDefaultBlockTokens,
             TieredStore* reference_store = nullptr);
  ~SequenceKV();
  SequenceKV(const SequenceKV&) = delete;
  SequenceKV& operator=(const SequenceKV&) = delete;

  // Reserves storage in every layer for n more tokens and returns the position of the first.
  // reference == true extends the reference (an error once generation started, except under
  // `rolling`); false appends generated tokens. Throws Error(OutOfMemory) if the pool is full
  // (nothing is reserved then).
  int64_t append(int64_t n, bool reference);
  // The next reference tokens start a new segment (a page). Segments are the units `sparse` selects
  // within and `rolling` drops.
  void begin_segment() { new_segment_ = true; }
  // sparse: where units start (begin_unit: a later reference position, inside the current or next
  // segment), the segments every generated token reads whole (set_focus: the page the decoder is
  // on) and those its top-k may come from (set_candidates); sparse_selection.h.
  SparseSelection& sparse() { return sparse_; }
  // rolling: frees the KV of reference segment `index` (not the one being filled). Its positions
  // stay taken; queries no longer see it.
  void drop_segment(size_t index);
  size_t segment_count() const { return segments_.size(); }

  // Pins that queries (query_spans, visible_spans) take on an offloaded reference's blocks last
  // until the ReadScope open around them ends; the store may move an unpinned block between tiers
  // at any time. The decoder holds one per sequence around each layer's attention. Moving a scope
  // moves the duty; a scope must not outlive its sequence. Open one as SequenceKV::ReadScope(kv).
  class [[nodiscard]] ReadScope {
   public:
    explicit ReadScope(const SequenceKV& kv) : kv_(&kv) {}
    ~ReadScope() {
      if (kv_) kv_->release_pins();
    }
    ReadScope(ReadScope&& o) noexcept : kv_(o.kv_) { o.kv_ = nullptr; }
    ReadScope(const ReadScope&) = delete;
    ReadScope& operator=(const ReadScope&) = delete;
    ReadScope& operator=(ReadScope&&) = delete;

   private:
    const SequenceKV* kv_;
  };
  // Bytes of this sequence's blocks in the store (0 without one).
  size_t offloaded_bytes() const { return offload_.bytes(); }

  // Reference reuse. snapshot_segments() is how many leading segments snapshot() can copy now: live
  // segments that hold only complete reference tokens (a quantised segment must be closed, i.e.
  // the next segment or generation has started). snapshot(count) copies the first `count` of them
  // out of the pool; restore(snap, count) rebuilds the first `count` segments of `snap` in this
  // sequence, which must be empty, byte for byte at the same positions (and with the same sparse
  // unit starts), as if they had been prefilled here. The pool's layout and this sequence's block
  // size must match the snapshot's (Internal error otherwise); Error(OutOfMemory) when the pool
  // cannot hold them (nothing is allocated then). Under `full` with a quantised reference, restored
  // segments are closed, so at least one more reference segment must follow before generation.
  size_t snapshot_segments() const;
  ReferenceSnapshot snapshot(size_t count) const;
  void restore(const ReferenceSnapshot& snap, size_t count);

  // A point to return to: checkpoint().roll_back() undoes the appends made after it (their storage
  // stays reserved and is reused by the next append). Only valid before anything is stored at the
  // undone positions, and while the sequence lives.
  class Checkpoint {
   public:
    void roll_back();

   private:
    friend class SequenceKV;
    SequenceKV* kv_;
    int64_t length_, generated_;
    size_t segments_;
    int64_t last_segment_length_;
    bool sealed_, new_segment_;
  };
  Checkpoint checkpoint();

  // keep < 1: q ([n_heads * head_dim], as attention sees it: after RoPE and rotation) of the token at
  // `pos` in `layer`, kept if it is a reference token before generation starts; ignored otherwise.
  void observe_query(int64_t layer, int64_t pos, const float* q, int64_t n_heads);
  // keep < 1: reference rows per layer and KV head dropped by compression so far (0 before).
  int64_t dropped_rows() const { return compressor_.dropped_rows(); }

  // Stores the keys and values of the token at `pos` in `layer`: k and v are its f32 rows
  // ([n_kv_heads * head_dim], rotated keys), converted or quantised into the storage types.
  void store(int64_t layer, int64_t pos, const float* k, const float* v);

  // Where the token at `pos` keeps its K and V in `layer` when they are stored as floats (not in a
  // quantised region): KV head h at k + h * head_stride (V likewise), head_dim elements each.
  struct Row {
    uint8_t* k;
    uint8_t* v;
    size_t head_stride;
  };
  Row row(int64_t layer, int64_t pos) const;

  // Spans a query at position `pos` may attend to (cached tokens at positions <= pos), appended to
  // out: every live reference token, and the window. Under `sparse` this is the dense view.
  void visible_spans(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out) const;
  // What a query actually reads for KV head `kv_head`: under `sparse`, for a generated token, the
  // selected units + window, chosen with the `group` query heads q ([group][head_dim]) that share
  // this KV head; otherwise visible_spans. Records the rows read (see active_bytes).
  void query_spans(int64_t layer, int64_t pos, int64_t kv_head, const float* q, int64_t group,
                   std::vector<kernels::KVSpan>& out) const;
  // Whether query_spans depends on the KV head (the decoder then gathers spans per head).
  bool per_head_spans(int64_t pos) const { return rules_.selects_units() && !in_reference(pos); }
  // Bytes of K and V (codes and group parameters) a query at `pos` can read over all layers (the
  // dense view).
  size_t visible_bytes(int64_t pos) const;
  // Bytes of K and V the last query read over all layers and KV heads: the sparse selection for a
  // generated token under `sparse`, visible_bytes otherwise.
  size_t active_bytes(int64_t pos) const;

  const KVPolicy& policy() const { return policy_; }
  const KVLayout& layout() const { return pool_.layout(); }
  int64_t length() const { return length_; }                   // next position
  int64_t reference_length() const { return reference_len_; }  // reference tokens appended (dropped included)
  // Tokens currently held per layer (live reference + min(generated, W) under a window).
  int64_t cached_tokens() const;
  // Bytes this sequence holds in the pool (from the pool's counters).
  size_t bytes() const { return pool_.bytes_for(id_); }

 private:
  struct Segment {
    int64_t first = 0, length = 0;
    bool live = true;
    std::vector<std::vector<int64_t>> blocks;  // [layer] -> blocks of block_tokens rows from `first` (empty: in the store)
  };
  size_t index_of(const Segment& s) const { return static_cast<size_t>(&s - segments_.data()); }
  // Rows a query past the reference reads in s (compression may have kept fewer than its positions).
  int64_t stored_rows(const Segment& s) const {
    const int64_t kept = compressor_.kept_rows(index_of(s));
    return kept >= 0 ? kept : s.length;
  }
  bool compressed(const Segment& s) const { return compressor_.kept_rows(index_of(s)) >= 0; }
  // Where a position lives: reference segment + row, or generated index.
  struct Where {
    int64_t segment = -1, row = 0, generated = -1;
  };
  Where locate(int64_t pos) const;
  void rollback(const Checkpoint& m);  // what Checkpoint::roll_back does
  bool in_reference(int64_t pos) const { return locate(pos).segment >= 0; }
  bool blocks_quantized() const;
  bool window_quantized() const;
  bool window_pos(const Where& w) const { return w.segment < 0; }
  // The block and row holding a position stored as a row of its own: a float reference row, or any
  // window row (row() and store() share it).
  struct Slot {
    int64_t block, row;
  };
  Slot row_slot(int64_t layer, int64_t pos, const Where& w) const;
  void release_all();
  void release_pins() const;  // what ReadScope's end does
  void close_segment();  // quantises the open segment's partial group and frees its staging
  void trim_last_block(Segment& s);    // a float segment's partial last block, re-allocated to its rows
  void regrow_last_block(Segment& s);  // and back to block_tokens rows, before output extends it
  // Each layer's last block of `s` (holding s.length % block_tokens rows, not 0) as a block of
  // `capacity` rows with the same rows. Precondition: the pool can take the difference.
  void reallocate_last_block(Segment& s, int64_t capacity);
  void quantize_stage(int64_t stage, int64_t rows, int64_t dst);
  void compress_reference();  // keep < 1, at the first generated append
  void summarise();           // sparse: unit key bounds of every segment
  void emit_rows(int64_t layer, const Segment& s, int64_t a, int64_t b, std::vector<kernels::KVSpan>& out, bool pin = true) const;
  void emit_window(int64_t layer, int64_t j, std::vector<kernels::KVSpan>& out) const;
  // Block i of segment s in `layer`, wherever it lives; an offloaded one is pinned until release_pins()
  // when `pin`, else its pointers are null (for byte counts).
  KVBlock block_at(const Segment& s, size_t layer, size_t i, bool pin) const;
  void offload(Segment& s);
  void visible_spans_impl(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out, bool pin) const;

  KVBlockPool& pool_;
  SeqId id_;
  KVPolicy policy_;
  const PolicyRules& rules_;  // policy_'s kind
  KVFootprint footprint_;     // the bytes of its regions
  int64_t block_tokens_;
  int64_t length_ = 0, reference_len_ = 0, generated_ = 0;
  bool sealed_ = false;       // generation has started
  bool new_segment_ = true;   // the next reference append starts a segment
  bool open_ = false;         // the last segment is still being filled (its staging is live)
  SparseSelection sparse_;            // sparse: units, bounds, focus
  ReferenceCompressor compressor_;    // keep < 1: observed queries, kept rows
  ReferenceOffload offload_;          // reference_store: the segments in the store, and read pins
  std::vector<Segment> segments_;
  std::vector<int64_t> before_;  // [segment] -> reference tokens in the segments before it (dropped ones included)
  // [layer] -> the window's ring block of W rows (quantised keys kept per token), -1 until
  // generation starts.
  std::vector<int64_t> ring_;
  // [layer] -> the staging block of the open segment's group being filled, or -1.
  std::vector<int64_t> seg_stage_;
  // [layer] -> rows of the open segment that are quantised.
  std::vector<int64_t> seg_done_;
};

}  // namespace folio
