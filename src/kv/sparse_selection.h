// SparseSelection: the `sparse` policy's state for one sequence (SequenceKV's reference, read by
// Quest selection, quest_selector.h): where units start, the key bounds of every segment's units,
// the segments a query reads whole (focus) and those the top-k may come from (candidates), and the
// bytes the last query of each layer and KV head read.
//
// Lifecycle: unit starts and focus are given while the reference fills; summarise() reads every
// segment's keys once, when generation starts; select() then answers each generated token's query.
// A dropped segment (rolling) is forgotten. Threads: select() and record_read() may run on many
// threads at once (the heads of a layer) once summarised; everything else on the owner's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_layout.h"
#include "kv/kv_policy.h"
#include "kv/quest_selector.h"

namespace folio {

class SparseSelection {
 public:
  SparseSelection(const KVLayout& layout, const KVPolicy& policy);

  // A unit starts at reference position `pos`, besides every segment start and every unit_tokens
  // after a start.
  void begin_unit(int64_t pos) { unit_starts_.push_back(pos); }
  // Segments every generated token reads whole (indices); replaces the previous focus.
  void set_focus(std::vector<size_t> segments) { focus_ = std::move(segments); }
  // Segments the top-k units may come from besides the first and last; empty (the default): any.
  void set_candidates(std::vector<size_t> segments) { candidates_ = std::move(segments); }
  // The unit starts inside [first, first + length), as offsets from first (a snapshot keeps them).
  std::vector<int64_t> starts_within(int64_t first, int64_t length) const;

  // A segment as summarise() reads it: its first position, the rows a generated token reads,
  // whether row r is position first + r (false once compression kept a subset), whether it is live.
  struct Segment {
    int64_t first, rows;
    bool positional, live;
  };
  // Block `block` (of block_tokens rows) of segment `segment` in `layer`, readable until the caller's
  // pins are released.
  using BlockReader = std::function<KVBlock(size_t segment, size_t layer, size_t block)>;
  // Cuts every segment into units and reads their key bounds. Once; summarised() says whether done.
  void summarise(std::span<const Segment> segments, int64_t block_tokens, const BlockReader& block);
  bool summarised() const { return summarised_; }
  void forget(size_t segment);

  // The rows a generated query (the `group` query heads q sharing kv_head) reads in `layer`.
  void select(int64_t layer, int64_t kv_head, const float* q, int64_t group, std::vector<SelectedRows>& out) const;
  // The bytes the last query of (layer, kv_head) read, and their sum over all.
  void record_read(int64_t layer, int64_t kv_head, size_t bytes) const;
  size_t bytes_read() const;

 private:
  int64_t n_layers_, n_kv_heads_, head_dim_, unit_tokens_, top_k_;
  std::vector<int64_t> unit_starts_;  // positions given by begin_unit
  std::vector<size_t> focus_, candidates_;
  std::vector<UnitBounds> units_;     // [segment]
  std::vector<bool> live_;            // [segment]
  bool summarised_ = false;
  std::unique_ptr<std::atomic<size_t>[]> read_;  // [layer * n_kv_heads + kv_head]
};

}  // namespace folio
