#include "kv/sequence_kv.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "kv/block_rows.h"
#include "kv/staged_group.h"

namespace folio {

using kernels::kKVKeyGroup;
using kernels::kv_quantized;
using kernels::kv_row_bytes;

namespace {
KVDType stage_key_type(KVDType t) { return KVFootprint::stage_key_type(t); }
}  // namespace

SequenceKV::SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens, TieredStore* reference_store)
    : pool_(pool),
      id_(id),
      policy_(policy),
      rules_(policy.rules()),
      footprint_(pool, policy, block_tokens),
      block_tokens_(block_tokens),
      sparse_(pool.layout(), policy),
      compressor_(pool.layout().n_layers, pool.layout().n_kv_heads, pool.layout().head_dim, policy.keep, policy.observe),
      offload_(pool, id),
      ring_(static_cast<size_t>(pool.layout().n_layers), -1),
      seg_stage_(static_cast<size_t>(pool.layout().n_layers), -1),
      seg_done_(static_cast<size_t>(pool.layout().n_layers), 0) {
  rules_.validate(policy);
  if (block_tokens < 1) throw_invalid("KV block size must be at least 1 token");
  block_tokens_ = footprint_.block_tokens();  // one key group per block when quantised
  offload_.attach(reference_store);
}

SequenceKV::~SequenceKV() { release_all(); }

bool SequenceKV::blocks_quantized() const { return footprint_.reference_quantized(); }

bool SequenceKV::window_quantized() const { return footprint_.window_quantized(); }

void SequenceKV::release_all() {
  release_pins();
  for (size_t i = 0; i < segments_.size(); ++i) offload_.erase(i);
  for (auto& s : segments_)
    for (auto& layer : s.blocks) {
      for (int64_t b : layer) pool_.release(b);
      layer.clear();
    }
  for (auto* blocks : {&ring_, &seg_stage_})
    for (int64_t& b : *blocks) {
      if (b >= 0) pool_.release(b);
      b = -1;
    }
}

SequenceKV::Where SequenceKV::locate(int64_t pos) const {
  // The last segment starting at or before pos.
  auto it = std::upper_bound(segments_.begin(), segments_.end(), pos,
                             [](int64_t p, const Segment& s) { return p < s.first; });
  Where w;
  if (it == segments_.begin()) {
    w.generated = pos;
    return w;
  }
  const auto i = static_cast<int64_t>(it - segments_.begin()) - 1;
  const Segment& s = segments_[static_cast<size_t>(i)];
  if (pos < s.first + s.length) {
    w.segment = i;
    w.row = pos - s.first;
    return w;
  }
  // Generated: positions past this segment minus the reference tokens before them.
  w.generated = pos - (before_[static_cast<size_t>(i)] + s.length);
  return w;
}

void SequenceKV::close_segment() {
  if (!open_) return;
  open_ = false;
  if (segments_.empty()) return;
  Segment& s = segments_.back();
  if (seg_stage_[0] < 0) {
    trim_last_block(s);
    offload(s);
    return;
  }
  for (size_t l = 0; l < seg_stage_.size(); ++l) {
    // The segment's last, partial group: quantise what it holds into a block of just its rows (a
    // page rarely ends on a group boundary; a whole group would waste half a group per page), then
    // free the staging.
    if (seg_done_[l] < s.length) {
      const int64_t rows = s.length - seg_done_[l];
      int64_t& block = s.blocks[l][static_cast<size_t>(seg_done_[l] / block_tokens_)];
      pool_.release(block);  // nothing was written to it: the group's rows are in the staging
      block = pool_.allocate(id_, static_cast<int64_t>(l), rows);
      quantize_stage(seg_stage_[l], rows, block);
    }
    seg_done_[l] = 0;
    pool_.release(seg_stage_[l]);
    seg_stage_[l] = -1;
  }
  offload(s);
}

void SequenceKV::trim_last_block(Segment& s) {
  if (s.length % block_tokens_ != 0) reallocate_last_block(s, s.length % block_tokens_);
}

void SequenceKV::regrow_last_block(Segment& s) { reallocate_last_block(s, block_tokens_); }

void SequenceKV::reallocate_last_block(Segment& s, int64_t capacity) {
  const int64_t rows = s.length % block_tokens_;
  const KVLayout& lay = pool_.layout();
  std::vector<float> k(static_cast<size_t>(lay.n_kv_heads * rows * lay.head_dim)), v(k.size());
  for (size_t l = 0; l < s.blocks.size(); ++l) {
    int64_t& block = s.blocks[l].back();
    if (pool_.block(block).tokens == capacity) continue;
    // Read, give back, then allocate: a full pool can always take a smaller block, and a larger one
    // was reserved by the caller. Float rows come back as the same bytes (block_rows.h).
    read_block_rows(lay, pool_.block(block), rows, k.data(), v.data());
    pool_.release(block);
    block = pool_.allocate(id_, static_cast<int64_t>(l), capacity);
    write_block_rows(lay, k.data(), v.data(), rows, pool_.block(block));
  }
}

void SequenceKV::offload(Segment& s) {
  const size_t i = index_of(s);
  if (!offload_.attached() || offload_.holds(i) || !s.live) return;
  offload_.move_out(i, s.blocks);
}

KVBlock SequenceKV::block_at(const Segment& s, size_t layer, size_t i, bool pin) const {
  const size_t si = index_of(s);
  if (!offload_.holds(si)) return pool_.block(s.blocks[layer][i]);
  return offload_.block(si, layer, i, pin);
}

void SequenceKV::release_pins() const { offload_.release_pins(); }

int64_t SequenceKV::append(int64_t n, bool reference) {
  if (n < 0) throw_invalid("cannot append a negative number of tokens");
  if (reference && sealed_ && !rules_.grows_reference_while_generating())
    throw_invalid("the reference is sealed: generation has already started");
  if (n == 0) return length_;
  const KVTypes& types = pool_.layout().types;
  const int64_t layers = pool_.layout().n_layers, G = kKVKeyGroup, bt = block_tokens_;
  const bool to_blocks = reference || !rules_.windowed();
  if (!reference && !rules_.windowed() && blocks_quantized() && !open_ && generated_ == 0)
    throw Error(Error::Kind::Internal, "full policy with a quantised reference: output cannot follow restored segments directly");
  const bool start_segment = to_blocks && (segments_.empty() || (reference && (new_segment_ || !open_)));
  // A segment ends when the next one starts or generation takes over.
  if (start_segment || !to_blocks) close_segment();
  if (!reference && policy_.compresses_reference() && !compressor_.done()) compress_reference();

  const bool needs_ring = !to_blocks && ring_[0] < 0;
  const bool needs_seg_stage = to_blocks && blocks_quantized() && seg_stage_[0] < 0;
  // Work out what is missing, check it fits as a whole, then allocate: a refused append leaves the
  // sequence as it was.
  int64_t new_blocks = 0;
  // Output going on in a closed segment (`full` after a restored reference) first takes its last
  // block back to full size if it was trimmed (a snapshot of an open segment kept it whole). The
  // trimmed block is given back before the full one is taken, so only the difference is needed.
  size_t regrow_bytes = 0;
  if (to_blocks && !start_segment && !open_) {
    const KVBlock& last = pool_.block(segments_.back().blocks[0].back());
    if (last.tokens < bt) regrow_bytes = footprint_.reference_block() - last.bytes;
  }
  const bool regrow = regrow_bytes > 0;
  if (to_blocks) {
    const int64_t have_rows = start_segment ? 0 : static_cast<int64_t>(segments_.back().blocks[0].size()) * bt;
    const int64_t need_rows = (start_segment ? 0 : segments_.back().length) + n;
    new_blocks = std::max<int64_t>(0, (need_rows - have_rows + bt - 1) / bt);
  }
  const KVFootprint& f = footprint_;
  const size_t per_layer = static_cast<size_t>(new_blocks) * f.reference_block() + regrow_bytes +
                           (needs_ring ? f.window() : 0) + (needs_seg_stage ? f.reference_stage() : 0);
  const size_t need_bytes = static_cast<size_t>(layers) * per_layer;
  if (!pool_.can_allocate(need_bytes))
    throw Error(Error::Kind::OutOfMemory, "KV pool cannot hold " + std::to_string(n) + " more tokens for sequence " +
                                              std::to_string(id_) + " (" + std::to_string(need_bytes) + " bytes; " +
                                              std::to_string(pool_.bytes_in_use()) + " of " +
                                              std::to_string(pool_.capacity_bytes()) + " in use)");
  if (regrow) regrow_last_block(segments_.back());
  if (start_segment) {
    Segment s;
    s.first = length_;
    s.blocks.resize(static_cast<size_t>(layers));
    segments_.push_back(std::move(s));
    before_.push_back(reference_len_);
    new_segment_ = false;
  }
  for (int64_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    for (int64_t b = 0; b < new_blocks; ++b) segments_.back().blocks[li].push_back(pool_.allocate(id_, l, bt));
    if (needs_ring) ring_[li] = pool_.allocate(id_, l, policy_.window, types.win_k, types.win_v, KVFootprint::kWindowKeyScales);
    if (needs_seg_stage)
      seg_stage_[li] = pool_.allocate(id_, l, G, stage_key_type(types.ref_k), types.ref_v, KVFootprint::kStageKeyScales);
  }
  const int64_t first = length_;
  length_ += n;
  if (to_blocks) {
    segments_.back().length += n;
    open_ = true;
  }
  if (reference) {
    reference_len_ += n;
  } else {
    generated_ += n;
    sealed_ = true;
    if (rules_.selects_units() && !sparse_.summarised()) summarise();
  }
  return first;
}

SequenceKV::Checkpoint SequenceKV::checkpoint() {
  Checkpoint c;
  c.kv_ = this;
  c.length_ = length_, c.generated_ = generated_, c.segments_ = segments_.size();
  c.last_segment_length_ = segments_.empty() ? 0 : segments_.back().length;
  c.sealed_ = sealed_, c.new_segment_ = new_segment_;
  return c;
}

void SequenceKV::Checkpoint::roll_back() { kv_->rollback(*this); }

void SequenceKV::rollback(const Checkpoint& m) {
  while (segments_.size() > m.segments_) {
    offload_.erase(segments_.size() - 1);
    for (auto& layer : segments_.back().blocks)
      for (int64_t b : layer) pool_.release(b);
    reference_len_ -= segments_.back().length;
    segments_.pop_back();
    before_.pop_back();
    open_ = false;
  }
  if (!segments_.empty() && segments_.back().length != m.last_segment_length_) {
    if (rules_.windowed() || m.generated_ == generated_)
      reference_len_ -= segments_.back().length - m.last_segment_length_;
    segments_.back().length = m.last_segment_length_;
  }
  length_ = m.length_;
  generated_ = m.generated_;
  sealed_ = m.sealed_;
  new_segment_ = m.new_segment_;
}

void SequenceKV::drop_segment(size_t index) {
  if (!rules_.drops_segments()) throw_invalid("only the rolling policy drops reference segments");
  if (index >= segments_.size()) throw_invalid("no reference segment " + std::to_string(index));
  Segment& s = segments_[index];
  if (!s.live) return;
  if (open_ && index + 1 == segments_.size()) throw_invalid("cannot drop the reference segment being filled");
  offload_.erase(index);
  for (auto& layer : s.blocks) {
    for (int64_t b : layer) pool_.release(b);
    layer.clear();
  }
  s.live = false;
  sparse_.forget(index);
}

void SequenceKV::observe_query(int64_t layer, int64_t pos, const float* q, int64_t n_heads) {
  if (!policy_.compresses_reference() || sealed_ || compressor_.done() || !in_reference(pos)) return;
  compressor_.observe(layer, pos, q, n_heads);
}

// keep < 1, at the first generated append: the compressor chooses the rows, this class reads and
// rewrites the blocks, wherever they live.
void SequenceKV::compress_reference() {
  std::vector<ReferenceCompressor::Segment> segs;
  for (const Segment& s : segments_) segs.push_back({s.first, s.length, s.live});
  const KVLayout& lay = pool_.layout();
  const auto read = [&](size_t i, size_t layer, std::vector<float>& k, std::vector<float>& v) {
    const Segment& s = segments_[i];
    read_segment_rows(lay, block_tokens_, s.length, [&](size_t b) { return block_at(s, layer, b, true); }, k, v);
    release_pins();
  };
  const auto write = [&](size_t i, size_t layer, const std::vector<std::vector<int64_t>>& keep, const std::vector<float>& k,
                         const std::vector<float>& v) {
    // The old rows are in k and v now: their blocks go back first, so compression never needs more
    // of the pool than the segment held (offloaded blocks are erased from the store afterwards).
    Segment& s = segments_[i];
    for (int64_t b : s.blocks[layer]) pool_.release(b);
    s.blocks[layer] = write_kept_rows(pool_, id_, static_cast<int64_t>(layer), block_tokens_, s.length, keep, k, v);
  };
  for (size_t i : compressor_.compress(segs, read, write)) {
    offload_.erase(i);  // its old blocks in the store; the new ones are in the pool
    offload(segments_[i]);
  }
}

void SequenceKV::summarise() {
  std::vector<SparseSelection::Segment> segs;
  for (const Segment& s : segments_) segs.push_back({s.first, stored_rows(s), !compressed(s), s.live});
  sparse_.summarise(segs, block_tokens_, [&](size_t i, size_t layer, size_t b) { return block_at(segments_[i], layer, b, true); });
  release_pins();
}

void SequenceKV::quantize_stage(int64_t stage, int64_t rows, int64_t dst) {
  quantize_staged_rows(pool_.layout(), pool_.block(stage), rows, pool_.block(dst));
}

void SequenceKV::store(int64_t layer, int64_t pos, const float* k, const float* v) {
  if (pos < 0 || pos >= length_) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " not appended");
  const KVLayout& lay = pool_.layout();
  const int64_t G = kKVKeyGroup;
  const auto li = static_cast<size_t>(layer);
  const Where w = locate(pos);
  if (window_pos(w) || !blocks_quantized()) {
    // A row of its own: converted, or (the window) quantised per token, final when written.
    const Slot slot = row_slot(layer, pos, w);
    const KVBlock& b = pool_.block(slot.block);
    write_key_row(lay, k, slot.row, b);
    write_value_row(lay, v, slot.row, b);
    return;
  }
  const int64_t j = w.row;  // index within the segment
  if (!open_ || w.segment + 1 != static_cast<int64_t>(segments_.size()))
    throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in a closed quantised segment");
  const KVBlock& s = pool_.block(seg_stage_[li]);
  const int64_t row = j % G;
  write_key_row(lay, k, row, s);    // q8 per token until the group is complete
  write_value_row(lay, v, row, s);  // values are final per token: stored in their type at once
  if (row != G - 1) return;
  quantize_stage(seg_stage_[li], G, segments_[static_cast<size_t>(w.segment)].blocks[li][static_cast<size_t>(j / G)]);
  seg_done_[li] = j + 1;
}

SequenceKV::Row SequenceKV::row(int64_t layer, int64_t pos) const {
  if (pos < 0 || pos >= length_) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " not appended");
  const Where w = locate(pos);
  if (window_pos(w) ? window_quantized() : blocks_quantized())
    throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in a quantised region");
  const Slot slot = row_slot(layer, pos, w);
  const KVBlock& b = pool_.block(slot.block);
  const size_t kb = kv_row_bytes(b.k_type, pool_.layout().head_dim), vb = kv_row_bytes(b.v_type, pool_.layout().head_dim);
  return {b.k + static_cast<size_t>(slot.row) * kb, b.v + static_cast<size_t>(slot.row) * vb, b.k_head_stride};
}

SequenceKV::Slot SequenceKV::row_slot(int64_t layer, int64_t pos, const Where& w) const {
  if (window_pos(w)) {
    // Ring slot of generated token j. Within a chunk longer than the window, slots are reused in
    // position order (see the class comment), so no eviction check is possible here.
    return {ring_[static_cast<size_t>(layer)], w.generated % policy_.window};
  }
  const Segment& s = segments_[static_cast<size_t>(w.segment)];
  if (!s.live) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " was dropped");
  if (compressed(s)) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in a compressed segment");
  if (offload_.holds(index_of(s))) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in an offloaded segment");
  return {s.blocks[static_cast<size_t>(layer)][static_cast<size_t>(w.row / block_tokens_)], w.row % block_tokens_};
}

void SequenceKV::emit_rows(int64_t layer, const Segment& s, int64_t a, int64_t b, std::vector<kernels::KVSpan>& out, bool pin) const {
  const auto li = static_cast<size_t>(layer);
  const int64_t bt = block_tokens_;
  const bool open_last = open_ && &s == &segments_.back() && blocks_quantized();
  for (int64_t i = a / bt; i * bt < b; ++i) {
    const int64_t lo = std::max(a, i * bt), hi = std::min(b, (i + 1) * bt);
    // A group not yet quantised is read from the staging block (group == block when quantised).
    const bool staged = open_last && i * bt >= seg_done_[li];
    out.push_back(block_span(pool_.layout(), staged ? pool_.block(seg_stage_[li]) : block_at(s, li, static_cast<size_t>(i), pin), lo - i * bt, hi - lo));
  }
}

void SequenceKV::emit_window(int64_t layer, int64_t j, std::vector<kernels::KVSpan>& out) const {
  // Generated token j sees generated tokens max(0, j-W+1)..j.
  // While j < W they are ring rows 0..j; after that the whole ring (the rows of older tokens were
  // overwritten in order).
  out.push_back(block_span(pool_.layout(), pool_.block(ring_[static_cast<size_t>(layer)]), 0, std::min(j + 1, policy_.window)));
}

void SequenceKV::visible_spans(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out) const {
  visible_spans_impl(layer, pos, out, true);
}

void SequenceKV::visible_spans_impl(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out, bool pin) const {
  const Where w = locate(pos);
  for (const Segment& s : segments_) {
    if (!s.live || s.first > pos) continue;
    // Causal inside the reference (and everywhere under `full`); a generated token sees it all.
    const int64_t rows = window_pos(w) ? stored_rows(s) : std::min(s.length, pos - s.first + 1);
    emit_rows(layer, s, 0, rows, out, pin);
  }
  if (window_pos(w)) emit_window(layer, w.generated, out);
}

void SequenceKV::query_spans(int64_t layer, int64_t pos, int64_t kv_head, const float* q, int64_t group,
                             std::vector<kernels::KVSpan>& out) const {
  if (!per_head_spans(pos)) {
    visible_spans(layer, pos, out);
    return;
  }
  const int64_t H = pool_.layout().n_kv_heads;
  thread_local std::vector<SelectedRows> selected;  // kept between queries: no allocation per step
  selected.clear();
  sparse_.select(layer, kv_head, q, group, selected);
  const size_t before = out.size();
  for (const SelectedRows& r : selected) emit_rows(layer, segments_[r.segment], r.begin, r.end, out);
  emit_window(layer, locate(pos).generated, out);
  size_t bytes = 0;
  for (size_t i = before; i < out.size(); ++i) bytes += span_bytes(pool_.layout(), out[i]);
  sparse_.record_read(layer, kv_head, bytes / static_cast<size_t>(H));
}

size_t SequenceKV::visible_bytes(int64_t pos) const {
  std::vector<kernels::KVSpan> spans;
  for (int64_t l = 0; l < pool_.layout().n_layers; ++l) visible_spans_impl(l, pos, spans, false);
  size_t bytes = 0;
  for (const kernels::KVSpan& s : spans) bytes += span_bytes(pool_.layout(), s);
  return bytes;
}

size_t SequenceKV::active_bytes(int64_t pos) const {
  if (!per_head_spans(pos)) return visible_bytes(pos);
  return sparse_.bytes_read();
}

int64_t SequenceKV::cached_tokens() const {
  int64_t live = 0;
  for (const Segment& s : segments_)
    if (s.live) live += stored_rows(s);
  if (!rules_.windowed()) return live;
  return live + std::min(generated_, policy_.window);
}

}  // namespace folio
