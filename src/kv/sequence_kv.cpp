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
// Compression pools scores over this many rows each side before choosing (SnapKV's kernel of 7).
constexpr int64_t kKeepPoolRadius = 3;
}  // namespace

SequenceKV::SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens)
    : pool_(pool),
      id_(id),
      policy_(policy),
      rules_(policy.rules()),
      footprint_(pool, policy, block_tokens),
      block_tokens_(block_tokens),
      offload_(pool, id),
      ring_(static_cast<size_t>(pool.layout().n_layers), -1),
      seg_stage_(static_cast<size_t>(pool.layout().n_layers), -1),
      seg_done_(static_cast<size_t>(pool.layout().n_layers), 0),
      active_(new std::atomic<size_t>[static_cast<size_t>(pool.layout().n_layers * pool.layout().n_kv_heads)]) {
  rules_.validate(policy);
  if (block_tokens < 1) throw_invalid("KV block size must be at least 1 token");
  block_tokens_ = footprint_.block_tokens();  // one key group per block when quantised
  for (int64_t i = 0; i < pool.layout().n_layers * pool.layout().n_kv_heads; ++i) active_[static_cast<size_t>(i)] = 0;
}

SequenceKV::~SequenceKV() { release_all(); }

bool SequenceKV::blocks_quantized() const { return footprint_.reference_quantized(); }

bool SequenceKV::window_quantized() const { return footprint_.window_quantized(); }

void SequenceKV::release_all() {
  release_pins();
  for (auto& s : segments_) erase_offloaded(s);
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
  w.generated = pos - (s.before + s.length);
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

void SequenceKV::offload_reference(TieredStore* store) {
  if (length_ != 0) throw Error(Error::Kind::Internal, "offload_reference after the first append");
  offload_.attach(store);
}

void SequenceKV::offload(Segment& s) {
  if (!offload_.attached() || s.offloaded || !s.live) return;
  s.cold = offload_.move_out(s.blocks);
  s.offloaded = true;
}

void SequenceKV::erase_offloaded(Segment& s) {
  if (!s.offloaded) return;
  offload_.erase(s.cold);
  s.offloaded = false;
}

KVBlock SequenceKV::block_at(const Segment& s, size_t layer, size_t i, bool pin) const {
  if (!s.offloaded) return pool_.block(s.blocks[layer][i]);
  const ReferenceOffload::ColdBlock& c = s.cold[layer][i];
  return pin ? offload_.pin(c) : c.meta;
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
  if (!reference && policy_.compresses_reference() && !compressed_) compress_reference();

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
    s.before = reference_len_;
    s.blocks.resize(static_cast<size_t>(layers));
    segments_.push_back(std::move(s));
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
    if (rules_.selects_units() && !summarised_) summarise();
  }
  return first;
}

SequenceKV::Mark SequenceKV::mark() const {
  return {length_, generated_, segments_.size(), segments_.empty() ? 0 : segments_.back().length, sealed_, new_segment_};
}

void SequenceKV::rollback(const Mark& m) {
  while (segments_.size() > m.segments) {
    erase_offloaded(segments_.back());
    for (auto& layer : segments_.back().blocks)
      for (int64_t b : layer) pool_.release(b);
    reference_len_ -= segments_.back().length;
    segments_.pop_back();
    open_ = false;
  }
  if (!segments_.empty() && segments_.back().length != m.last_segment_length) {
    if (rules_.windowed() || m.generated == generated_)
      reference_len_ -= segments_.back().length - m.last_segment_length;
    segments_.back().length = m.last_segment_length;
  }
  length_ = m.length;
  generated_ = m.generated;
  sealed_ = m.sealed;
  new_segment_ = m.new_segment;
}

void SequenceKV::drop_segment(size_t index) {
  if (!rules_.drops_segments()) throw_invalid("only the rolling policy drops reference segments");
  if (index >= segments_.size()) throw_invalid("no reference segment " + std::to_string(index));
  Segment& s = segments_[index];
  if (!s.live) return;
  if (open_ && index + 1 == segments_.size()) throw_invalid("cannot drop the reference segment being filled");
  erase_offloaded(s);
  for (auto& layer : s.blocks) {
    for (int64_t b : layer) pool_.release(b);
    layer.clear();
  }
  s.live = false;
}

size_t SequenceKV::worst_case_bytes(const KVBlockPool& pool, const KVPolicy& policy, int64_t block_tokens,
                                    std::span<const int64_t> segments, int64_t generated, bool reference_offloaded) {
  if (segments.empty()) return 0;
  const KVFootprint f(pool, policy, block_tokens);
  if (reference_offloaded) {
    // A segment leaves the pool when the next starts, before the next takes any block; under a
    // window the last one leaves when generation starts, before the ring is allocated.
    size_t largest_open = 0;
    for (size_t i = 0; i + 1 < segments.size(); ++i) largest_open = std::max(largest_open, f.open_segment(segments[i]));
    const size_t last = policy.windowed() ? std::max(f.open_segment(segments.back()), generated > 0 ? f.window() : 0)
                                          : f.open_segment(segments.back() + generated);
    return static_cast<size_t>(pool.layout().n_layers) * std::max(largest_open, last);
  }
  // A segment is open (whole blocks) while it fills and shrinks when the next starts: the peak is
  // the largest of (segments closed so far + the one filling).
  size_t closed = 0, per_layer = 0;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    per_layer = std::max(per_layer, closed + f.open_segment(segments[i]));
    closed += f.closed_segment(segments[i]);
  }
  if (!policy.windowed()) {
    // The output extends the last segment, which stays open.
    per_layer = std::max(per_layer, closed + f.open_segment(segments.back() + generated));
  } else {
    // Prefill ends with the last segment open; generation closes it, then takes the window.
    per_layer = std::max(per_layer, closed + f.open_segment(segments.back()));
    if (generated > 0) per_layer = std::max(per_layer, closed + f.closed_segment(segments.back()) + f.window());
  }
  return static_cast<size_t>(pool.layout().n_layers) * per_layer;
}

size_t SequenceKV::snapshot_segments() const {
  size_t n = 0;
  for (size_t i = 0; i < segments_.size(); ++i, ++n) {
    const Segment& s = segments_[i];
    const bool last = i + 1 == segments_.size();
    if (!s.live || s.rows >= 0) break;  // dropped, or compressed (its rows are not positions)
    if (blocks_quantized() && last && open_) break;  // its last group is still in the staging block
    if (last && s.before + s.length > reference_len_ && blocks_quantized()) break;  // `full`: output shares it
  }
  return n;
}

ReferenceSnapshot SequenceKV::snapshot(size_t count) const {
  if (count > snapshot_segments())
    throw Error(Error::Kind::Internal, "KV snapshot of " + std::to_string(count) + " segments asked, " +
                                           std::to_string(snapshot_segments()) + " can be copied");
  ReferenceSnapshot snap;
  snap.types = pool_.layout().types;
  snap.n_layers = pool_.layout().n_layers;
  snap.block_tokens = block_tokens_;
  for (size_t i = 0; i < count; ++i) {
    const Segment& s = segments_[i];
    ReferenceSnapshot::Segment out;
    // Under `full` the last segment goes on with the generated tokens: only its reference rows.
    out.length = std::min(s.length, reference_len_ - s.before);
    for (int64_t p : unit_starts_)
      if (p > s.first && p < s.first + out.length) out.unit_starts.push_back(p - s.first);
    const auto nblocks = static_cast<size_t>((out.length + block_tokens_ - 1) / block_tokens_);
    out.layers.resize(static_cast<size_t>(pool_.layout().n_layers));
    for (size_t l = 0; l < out.layers.size(); ++l)
      for (size_t b = 0; b < nblocks; ++b) {
        const KVBlock blk = block_at(s, l, b, true);
        out.layers[l].push_back({blk.tokens, blk.k_type, blk.v_type, std::vector<uint8_t>(blk.k, blk.k + blk.bytes)});
      }
    snap.segments.push_back(std::move(out));
    release_pins();
  }
  return snap;
}

void SequenceKV::restore(const ReferenceSnapshot& snap, size_t count) {
  if (length_ != 0 || !segments_.empty()) throw Error(Error::Kind::Internal, "KV restore into a sequence that is not empty");
  if (count > snap.segments.size()) throw Error(Error::Kind::Internal, "KV restore of more segments than the snapshot holds");
  const KVTypes& t = pool_.layout().types;
  if (snap.n_layers != pool_.layout().n_layers || snap.block_tokens != block_tokens_ || snap.types.ref_k != t.ref_k ||
      snap.types.ref_v != t.ref_v)
    throw Error(Error::Kind::Internal, "KV restore: the snapshot was taken with another layout or block size");
  size_t need = 0;
  for (size_t i = 0; i < count; ++i)
    for (const auto& layer : snap.segments[i].layers)
      for (const ReferenceSnapshot::Block& b : layer) need += pool_.block_bytes(b.tokens, b.k, b.v);
  if (!pool_.can_allocate(need))
    throw Error(Error::Kind::OutOfMemory, "KV pool cannot hold a reused reference of " + std::to_string(snap.tokens(count)) +
                                              " tokens for sequence " + std::to_string(id_) + " (" + std::to_string(need) + " bytes)");
  for (size_t i = 0; i < count; ++i) {
    const ReferenceSnapshot::Segment& in = snap.segments[i];
    Segment s;
    s.first = length_;
    s.before = reference_len_;
    s.length = in.length;
    s.blocks.resize(in.layers.size());
    for (size_t l = 0; l < in.layers.size(); ++l)
      for (const ReferenceSnapshot::Block& b : in.layers[l]) {
        const int64_t id = pool_.allocate(id_, static_cast<int64_t>(l), b.tokens, b.k, b.v);
        const KVBlock& blk = pool_.block(id);
        if (blk.bytes != b.bytes.size()) throw Error(Error::Kind::Internal, "KV restore: a block changed size");
        std::copy(b.bytes.begin(), b.bytes.end(), blk.k);
        s.blocks[l].push_back(id);
      }
    for (int64_t u : in.unit_starts) unit_starts_.push_back(s.first + u);
    segments_.push_back(std::move(s));
    length_ += in.length;
    reference_len_ += in.length;
    // Complete: where every complete segment goes (under `full` the last one goes on with the
    // output, in the pool).
    if (rules_.windowed() || i + 1 < count) offload(segments_.back());
  }
  open_ = false;  // every restored segment is complete: the next reference tokens start a new one
  new_segment_ = true;
}

void SequenceKV::observe_query(int64_t layer, int64_t pos, const float* q, int64_t n_heads) {
  if (!policy_.compresses_reference() || sealed_ || compressed_ || !in_reference(pos)) return;
  if (!observed_) observed_ = std::make_unique<ObservedQueries>(pool_.layout().n_layers, policy_.observe, n_heads * pool_.layout().head_dim);
  observed_->add(layer, pos, q);
}

void SequenceKV::compress_reference() {
  compressed_ = true;
  if (!observed_) return;  // nothing observed (a reference restored whole): it stays whole
  const KVLayout& lay = pool_.layout();
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, group = observed_->width() / (H * D);
  const int64_t observed_from = observed_->first_position();
  // Per segment: its rows before the observed tokens may go (keep of them stay), the observed ones
  // stay. Segments that lose at least one row are the targets.
  std::vector<int64_t> open_rows(segments_.size()), counts(segments_.size());
  std::vector<size_t> targets;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    open_rows[i] = std::clamp<int64_t>(observed_from - s.first, 0, s.length);
    counts[i] = static_cast<int64_t>(std::ceil(policy_.keep * static_cast<double>(open_rows[i]))) + (s.length - open_rows[i]);
    if (s.live && s.rows < 0 && counts[i] < s.length) targets.push_back(i);
  }
  if (targets.empty()) return;
  std::vector<std::vector<float>> k(segments_.size()), v(segments_.size());
  std::vector<std::vector<std::vector<int64_t>>> keep(segments_.size(), std::vector<std::vector<int64_t>>(static_cast<size_t>(H)));
  std::vector<float> keys;
  std::vector<int64_t> positions;
  for (size_t l = 0; l < static_cast<size_t>(lay.n_layers); ++l) {
    // Every live row of this layer, read before any of them is replaced.
    positions.clear();
    for (size_t i = 0; i < segments_.size(); ++i) {
      const Segment& s = segments_[i];
      if (!s.live) continue;
      read_rows(s, l, k[i], v[i]);
      for (int64_t r = 0; r < s.length; ++r) positions.push_back(s.first + r);
    }
    for (int64_t h = 0; h < H; ++h) {
      keys.clear();
      for (size_t i = 0; i < segments_.size(); ++i)
        if (segments_[i].live) keys.insert(keys.end(), k[i].begin() + h * segments_[i].length * D, k[i].begin() + (h + 1) * segments_[i].length * D);
      const std::vector<float> mass = attention_mass(*observed_, static_cast<int64_t>(l), h, group, D, keys.data(), positions);
      size_t off = 0;
      for (size_t i = 0; i < segments_.size(); ++i) {
        if (!segments_[i].live) continue;
        const auto len = static_cast<size_t>(segments_[i].length), open = static_cast<size_t>(open_rows[i]);
        if (std::find(targets.begin(), targets.end(), i) != targets.end()) {
          std::vector<int64_t>& rows = keep[i][static_cast<size_t>(h)];
          rows = select_rows(std::span<const float>(mass).subspan(off, open), counts[i] - static_cast<int64_t>(len - open), kKeepPoolRadius);
          for (auto r = static_cast<int64_t>(open); r < static_cast<int64_t>(len); ++r) rows.push_back(r);  // observed: kept
        }
        off += len;
      }
    }
    for (size_t i : targets) put_kept_rows(segments_[i], l, keep[i], k[i], v[i]);
  }
  for (size_t i : targets) {
    Segment& s = segments_[i];
    erase_offloaded(s);  // its old blocks in the store; the new ones are in s.blocks
    s.rows = counts[i];
    dropped_rows_ += s.length - s.rows;
    offload(s);
  }
}

void SequenceKV::read_rows(const Segment& s, size_t layer, std::vector<float>& k, std::vector<float>& v) const {
  const KVLayout& lay = pool_.layout();
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, bt = block_tokens_, len = s.length;
  k.resize(static_cast<size_t>(H * len * D));
  v.resize(k.size());
  std::vector<float> bk(static_cast<size_t>(H * bt * D)), bv(bk.size());
  for (int64_t i = 0; i * bt < len; ++i) {
    const int64_t rows = std::min(bt, len - i * bt);
    read_block_rows(lay, block_at(s, layer, static_cast<size_t>(i), true), rows, bk.data(), bv.data());
    for (int64_t h = 0; h < H; ++h) {
      std::copy_n(bk.begin() + h * rows * D, rows * D, k.begin() + (h * len + i * bt) * D);
      std::copy_n(bv.begin() + h * rows * D, rows * D, v.begin() + (h * len + i * bt) * D);
    }
  }
  release_pins();
}

void SequenceKV::put_kept_rows(Segment& s, size_t layer, const std::vector<std::vector<int64_t>>& keep,
                               const std::vector<float>& k, const std::vector<float>& v) {
  const KVLayout& lay = pool_.layout();
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, bt = block_tokens_, len = s.length;
  const auto n = static_cast<int64_t>(keep[0].size());
  // The old rows are in k and v now: their blocks go back first, so compression never needs more
  // of the pool than the segment held (offloaded blocks are erased from the store afterwards).
  for (int64_t b : s.blocks[layer]) pool_.release(b);
  s.blocks[layer].clear();
  std::vector<float> bk(static_cast<size_t>(H * bt * D)), bv(bk.size());
  for (int64_t i = 0; i * bt < n; ++i) {
    const int64_t rows = std::min(bt, n - i * bt);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = (h * len + keep[static_cast<size_t>(h)][static_cast<size_t>(i * bt + r)]) * D, dst = (h * rows + r) * D;
        std::copy_n(k.begin() + src, D, bk.begin() + dst);
        std::copy_n(v.begin() + src, D, bv.begin() + dst);
      }
    // Blocks of just the rows they hold (the last one is short; nothing is appended to a compressed
    // segment), as a quantised segment's last group is.
    const int64_t id = pool_.allocate(id_, static_cast<int64_t>(layer), rows);
    write_block_rows(lay, bk.data(), bv.data(), rows, pool_.block(id));
    s.blocks[layer].push_back(id);
  }
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
  if (s.rows >= 0) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in a compressed segment");
  if (s.offloaded) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in an offloaded segment");
  return {s.blocks[static_cast<size_t>(layer)][static_cast<size_t>(w.row / block_tokens_)], w.row % block_tokens_};
}

kernels::KVSpan SequenceKV::span_of(const KVBlock& b, int64_t first_row, int64_t rows) const {
  const KVLayout& lay = pool_.layout();
  const int64_t D = lay.head_dim, vg = lay.value_group();
  const auto first = static_cast<size_t>(first_row);
  kernels::KVSpan sp;
  sp.k = b.k + first * kv_row_bytes(b.k_type, D);
  sp.v = b.v + first * kv_row_bytes(b.v_type, D);
  sp.tokens = rows;
  sp.k_head_stride = b.k_head_stride;
  sp.v_head_stride = b.v_head_stride;
  sp.k_type = b.k_type;
  sp.v_type = b.v_type;
  // Keys quantised per token (the window) carry their parameters per row, as values do.
  sp.k_param_stride = b.k_param_stride;
  sp.k_params = b.k_params + first * b.k_param_stride;
  sp.k_group = kernels::kv_token_key_group(D);
  sp.v_param_stride = static_cast<size_t>(lay.row_elems() / vg * kernels::kv_params_per_group(b.v_type));
  sp.v_params = b.v_params + first * sp.v_param_stride;
  sp.v_group = vg;
  return sp;
}

void SequenceKV::emit_rows(int64_t layer, const Segment& s, int64_t a, int64_t b, std::vector<kernels::KVSpan>& out, bool pin) const {
  const auto li = static_cast<size_t>(layer);
  const int64_t bt = block_tokens_;
  const bool open_last = open_ && &s == &segments_.back() && blocks_quantized();
  for (int64_t i = a / bt; i * bt < b; ++i) {
    const int64_t lo = std::max(a, i * bt), hi = std::min(b, (i + 1) * bt);
    // A group not yet quantised is read from the staging block (group == block when quantised).
    const bool staged = open_last && i * bt >= seg_done_[li];
    out.push_back(span_of(staged ? pool_.block(seg_stage_[li]) : block_at(s, li, static_cast<size_t>(i), pin), lo - i * bt, hi - lo));
  }
}

void SequenceKV::emit_window(int64_t layer, int64_t j, std::vector<kernels::KVSpan>& out) const {
  // Generated token j sees generated tokens max(0, j-W+1)..j.
  // While j < W they are ring rows 0..j; after that the whole ring (the rows of older tokens were
  // overwritten in order).
  out.push_back(span_of(pool_.block(ring_[static_cast<size_t>(layer)]), 0, std::min(j + 1, policy_.window)));
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

void SequenceKV::summarise() {
  std::vector<float> keys(static_cast<size_t>(block_tokens_ * pool_.layout().head_dim));
  std::sort(unit_starts_.begin(), unit_starts_.end());
  for (Segment& s : segments_) summarise(s, keys);
  release_pins();
  summarised_ = true;
}

// Units start at the segment's start, at the starts given inside it, and every unit_tokens after
// each; their bounds are read from the stored keys (dequantised when the reference is quantised).
void SequenceKV::summarise(Segment& s, std::vector<float>& keys) {
  const KVLayout& lay = pool_.layout();
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, bt = block_tokens_;
  const int64_t length = stored_rows(s);
  std::vector<int64_t> marks;  // positions: no longer rows once compressed
  if (s.rows < 0)
    for (int64_t p : unit_starts_) marks.push_back(p - s.first);
  s.units.cut(length, marks, policy_.unit_tokens);
  s.units.reset(lay.n_layers, H, D);
  for (int64_t l = 0; l < lay.n_layers; ++l)
    for (int64_t h = 0; h < H; ++h)
      for (size_t u = 0; u < s.units.starts.size(); ++u) {
        const int64_t lo = s.units.starts[u], hi = s.units.unit_end(u);
        for (int64_t i = lo / bt; i * bt < hi; ++i) {
          const KVBlock b = block_at(s, static_cast<size_t>(l), static_cast<size_t>(i), true);
          const int64_t rows = std::min(bt, length - i * bt);
          const uint8_t* kh = b.k + static_cast<size_t>(h) * b.k_head_stride;
          if (kv_quantized(b.k_type))
            kernels::dequantize_key_rows(b.k_type, kh, b.k_params + h * kernels::kv_params_per_group(b.k_type) * D, rows, D, keys.data());
          else
            convert_to_f32(kernels::kv_float_dtype(b.k_type), kh, keys.data(), rows * D);
          const int64_t r0 = std::max(lo - i * bt, int64_t{0}), r1 = std::min(rows, hi - i * bt);
          s.units.widen(l, u, h, H, D, keys.data() + r0 * D, r1 - r0);
        }
      }
}

void SequenceKV::query_spans(int64_t layer, int64_t pos, int64_t kv_head, const float* q, int64_t group,
                             std::vector<kernels::KVSpan>& out) const {
  if (!per_head_spans(pos)) {
    visible_spans(layer, pos, out);
    return;
  }
  const int64_t H = pool_.layout().n_kv_heads;
  // Kept between queries (one per layer and KV head of every step): no allocation per step.
  thread_local std::vector<const UnitBounds*> bounds;
  thread_local std::vector<SelectedRows> selected;
  bounds.clear();
  selected.clear();
  for (const Segment& s : segments_) bounds.push_back(s.live ? &s.units : nullptr);
  select_units(bounds, {layer, kv_head, H, pool_.layout().head_dim, q, group, policy_.top_k, focus_, candidates_}, selected);
  const size_t before = out.size();
  for (const SelectedRows& r : selected) emit_rows(layer, segments_[r.segment], r.begin, r.end, out);
  emit_window(layer, locate(pos).generated, out);
  size_t bytes = 0;
  for (size_t i = before; i < out.size(); ++i) bytes += span_bytes(out[i]);
  active_[static_cast<size_t>(layer * H + kv_head)] = bytes / static_cast<size_t>(H);
}

size_t SequenceKV::span_bytes(const kernels::KVSpan& s) const {
  const KVLayout& lay = pool_.layout();
  const auto H = static_cast<size_t>(lay.n_kv_heads), D = static_cast<size_t>(lay.head_dim), T = static_cast<size_t>(s.tokens);
  const size_t key_group_params = s.k_param_stride ? 0 : H * static_cast<size_t>(kernels::kv_params_per_group(s.k_type)) * D * 2;
  return T * H * (kv_row_bytes(s.k_type, lay.head_dim) + kv_row_bytes(s.v_type, lay.head_dim)) + key_group_params +
         T * (s.k_param_stride + s.v_param_stride) * 2;
}

size_t SequenceKV::visible_bytes(int64_t pos) const {
  std::vector<kernels::KVSpan> spans;
  for (int64_t l = 0; l < pool_.layout().n_layers; ++l) visible_spans_impl(l, pos, spans, false);
  size_t bytes = 0;
  for (const kernels::KVSpan& s : spans) bytes += span_bytes(s);
  return bytes;
}

size_t SequenceKV::active_bytes(int64_t pos) const {
  if (!per_head_spans(pos)) return visible_bytes(pos);
  size_t bytes = 0;
  for (int64_t i = 0; i < pool_.layout().n_layers * pool_.layout().n_kv_heads; ++i) bytes += active_[static_cast<size_t>(i)];
  return bytes;
}

int64_t SequenceKV::cached_tokens() const {
  int64_t live = 0;
  for (const Segment& s : segments_)
    if (s.live) live += stored_rows(s);
  if (!rules_.windowed()) return live;
  return live + std::min(generated_, policy_.window);
}

}  // namespace folio
