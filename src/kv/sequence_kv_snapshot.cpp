// SequenceKV's reference reuse: snapshot() copies complete leading segments out of the pool,
// restore() rebuilds them in an empty sequence byte for byte (sequence_kv.h states the contract).
#include <algorithm>
#include <string>

#include "core/error.h"
#include "kv/sequence_kv.h"

namespace folio {

size_t SequenceKV::snapshot_segments() const {
  size_t n = 0;
  for (size_t i = 0; i < segments_.size(); ++i, ++n) {
    const Segment& s = segments_[i];
    const bool last = i + 1 == segments_.size();
    if (!s.live || compressed(s)) break;  // dropped, or compressed (its rows are not positions)
    if (blocks_quantized() && last && open_) break;  // its last group is still in the staging block
    if (last && before_[i] + s.length > reference_len_ && blocks_quantized()) break;  // `full`: output shares it
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
    out.length = std::min(s.length, reference_len_ - before_[i]);
    out.unit_starts = sparse_.starts_within(s.first, out.length);
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
    for (int64_t u : in.unit_starts) sparse_.begin_unit(s.first + u);
    segments_.push_back(std::move(s));
    before_.push_back(reference_len_);
    length_ += in.length;
    reference_len_ += in.length;
    // Complete: where every complete segment goes (under `full` the last one goes on with the
    // output, in the pool).
    if (rules_.windowed() || i + 1 < count) offload(segments_.back());
  }
  open_ = false;  // every restored segment is complete: the next reference tokens start a new one
  new_segment_ = true;
}

}  // namespace folio
