#include "kv/sequence_kv.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace folio {

SequenceKV::SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens)
    : pool_(pool),
      id_(id),
      policy_(policy),
      block_tokens_(block_tokens),
      blocks_(static_cast<size_t>(pool.layout().n_layers)),
      ring_(static_cast<size_t>(pool.layout().n_layers), -1) {
  if (policy.window < 1) throw_invalid("window must be at least 1, got " + std::to_string(policy.window));
  if (block_tokens < 1) throw_invalid("KV block size must be at least 1 token");
}

SequenceKV::~SequenceKV() { release_all(); }

void SequenceKV::release_all() {
  for (auto& layer : blocks_) {
    for (int64_t b : layer) pool_.release(b);
    layer.clear();
  }
  for (auto& r : ring_) {
    if (r >= 0) pool_.release(r);
    r = -1;
  }
}

int64_t SequenceKV::append(int64_t n, bool reference) {
  if (n < 0) throw_invalid("cannot append a negative number of tokens");
  if (reference && sealed_) throw_invalid("the reference is sealed: generation has already started");
  const int64_t layers = pool_.layout().n_layers;
  const bool to_blocks = reference || policy_.kind == KVPolicyKind::Full;
  const bool needs_ring = !to_blocks && ring_[0] < 0 && n > 0;

  // Work out what is missing, check it fits as a whole, then allocate: a refused append leaves the
  // sequence exactly as it was.
  int64_t have_rows = static_cast<int64_t>(blocks_[0].size()) * block_tokens_;
  int64_t new_blocks = 0;
  if (to_blocks) {
    int64_t need_rows = length_ + n;
    new_blocks = std::max<int64_t>(0, (need_rows - have_rows + block_tokens_ - 1) / block_tokens_);
  }
  size_t need_bytes = static_cast<size_t>(layers) *
                      (static_cast<size_t>(new_blocks) * pool_.block_bytes(block_tokens_) +
                       (needs_ring ? pool_.block_bytes(policy_.window) : 0));
  if (!pool_.can_allocate(need_bytes))
    throw Error(Error::Kind::OutOfMemory, "KV pool cannot hold " + std::to_string(n) + " more tokens for sequence " +
                                              std::to_string(id_) + " (" + std::to_string(need_bytes) + " bytes; " +
                                              std::to_string(pool_.bytes_in_use()) + " of " +
                                              std::to_string(pool_.capacity_bytes()) + " in use)");
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t b = 0; b < new_blocks; ++b) blocks_[static_cast<size_t>(l)].push_back(pool_.allocate(id_, l, block_tokens_));
    if (needs_ring) ring_[static_cast<size_t>(l)] = pool_.allocate(id_, l, policy_.window);
  }
  int64_t first = length_;
  length_ += n;
  if (reference) {
    reference_len_ = length_;
  } else if (n > 0) {
    sealed_ = true;
  }
  return first;
}

SequenceKV::Row SequenceKV::row(int64_t layer, int64_t pos) const {
  const size_t hb = pool_.layout().head_bytes();
  if (pos < 0 || pos >= length_) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " not appended");
  const bool in_blocks = pos < reference_len_ || policy_.kind == KVPolicyKind::Full;
  int64_t id, row;
  if (in_blocks) {
    id = blocks_[static_cast<size_t>(layer)][static_cast<size_t>(pos / block_tokens_)];
    row = pos % block_tokens_;
  } else {
    // Ring slot of generated token j. Within a chunk longer than the window, slots are reused in
    // position order (see the class comment), so no eviction check is possible here.
    int64_t j = pos - reference_len_;
    id = ring_[static_cast<size_t>(layer)];
    row = j % policy_.window;
  }
  const KVBlock& b = pool_.block(id);
  return {b.k + static_cast<size_t>(row) * hb, b.v + static_cast<size_t>(row) * hb, static_cast<size_t>(b.tokens) * hb};
}

void SequenceKV::visible_spans(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out) const {
  const auto& blocks = blocks_[static_cast<size_t>(layer)];
  const size_t hb = pool_.layout().head_bytes();
  // Rows held in blocks that this query may see: causal up to pos, and never past the reference
  // under rswa (generated tokens live in the ring there).
  int64_t block_rows = policy_.kind == KVPolicyKind::Full ? pos + 1 : std::min(pos + 1, reference_len_);
  for (size_t i = 0; static_cast<int64_t>(i) * block_tokens_ < block_rows; ++i) {
    const KVBlock& b = pool_.block(blocks[i]);
    int64_t rows = std::min(block_tokens_, block_rows - static_cast<int64_t>(i) * block_tokens_);
    out.push_back({b.k, b.v, rows, static_cast<size_t>(b.tokens) * hb});
  }
  if (policy_.kind == KVPolicyKind::RSwa && pos >= reference_len_) {
    // Generated token j = pos - P sees generated tokens max(0, j-W+1)..j: while j < W they are ring
    // rows 0..j; after that the whole ring (the rows of older tokens were overwritten in order).
    int64_t j = pos - reference_len_;
    const KVBlock& r = pool_.block(ring_[static_cast<size_t>(layer)]);
    out.push_back({r.k, r.v, std::min(j + 1, policy_.window), static_cast<size_t>(r.tokens) * hb});
  }
}

int64_t SequenceKV::cached_tokens() const {
  if (policy_.kind == KVPolicyKind::Full) return length_;
  return reference_len_ + std::min(generated_length(), policy_.window);
}

}  // namespace folio
