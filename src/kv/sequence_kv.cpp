#include "kv/sequence_kv.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace folio {

using kernels::kKVKeyGroup;
using kernels::kv_quantized;
using kernels::kv_row_bytes;

namespace {
// Rows of a group still being filled are kept in f16 when their region is quantised.
KVDType stage_type(KVDType t) { return kv_quantized(t) ? KVDType::F16 : t; }
}  // namespace

SequenceKV::SequenceKV(KVBlockPool& pool, SeqId id, KVPolicy policy, int64_t block_tokens)
    : pool_(pool),
      id_(id),
      policy_(policy),
      block_tokens_(block_tokens),
      blocks_(static_cast<size_t>(pool.layout().n_layers)),
      ring_(static_cast<size_t>(pool.layout().n_layers)),
      stage_(static_cast<size_t>(pool.layout().n_layers), -1),
      block_done_(static_cast<size_t>(pool.layout().n_layers), 0),
      window_done_(static_cast<size_t>(pool.layout().n_layers), 0) {
  if (policy.window < 1) throw_invalid("window must be at least 1, got " + std::to_string(policy.window));
  if (block_tokens < 1) throw_invalid("KV block size must be at least 1 token");
  if (blocks_quantized()) block_tokens_ = kKVKeyGroup;  // one key group per block
}

SequenceKV::~SequenceKV() { release_all(); }

bool SequenceKV::blocks_quantized() const {
  const KVTypes& t = pool_.layout().types;
  return kv_quantized(t.ref_k) || kv_quantized(t.ref_v);
}

bool SequenceKV::window_quantized() const {
  const KVTypes& t = pool_.layout().types;
  return policy_.kind == KVPolicyKind::RSwa && (kv_quantized(t.win_k) || kv_quantized(t.win_v));
}

void SequenceKV::release_all() {
  for (auto& layer : blocks_) {
    for (int64_t b : layer) pool_.release(b);
    layer.clear();
  }
  for (auto& r : ring_) {
    for (int64_t b : r) pool_.release(b);
    r.clear();
  }
  for (auto& s : stage_) {
    if (s >= 0) pool_.release(s);
    s = -1;
  }
}

int64_t SequenceKV::append(int64_t n, bool reference) {
  if (n < 0) throw_invalid("cannot append a negative number of tokens");
  if (reference && sealed_) throw_invalid("the reference is sealed: generation has already started");
  const KVTypes& types = pool_.layout().types;
  const int64_t layers = pool_.layout().n_layers, G = kKVKeyGroup;
  const bool to_blocks = reference || policy_.kind == KVPolicyKind::Full;
  const bool sealing = !reference && !sealed_ && n > 0;
  const bool needs_ring = !to_blocks && ring_[0].empty() && n > 0;
  const bool qwin = window_quantized();
  // The reference's staging group is quantised and freed when generation starts; a quantised
  // window needs its own staging then.
  const bool drop_ref_stage = sealing && policy_.kind == KVPolicyKind::RSwa && stage_[0] >= 0;
  const bool needs_stage = n > 0 && ((to_blocks && blocks_quantized() && stage_[0] < 0) ||
                                     (!to_blocks && qwin && (stage_[0] < 0 || drop_ref_stage)));

  // Work out what is missing, check it fits as a whole, then allocate: a refused append leaves the
  // sequence exactly as it was.
  int64_t have_rows = static_cast<int64_t>(blocks_[0].size()) * block_tokens_;
  int64_t new_blocks = 0;
  if (to_blocks) {
    int64_t need_rows = length_ + n;
    new_blocks = std::max<int64_t>(0, (need_rows - have_rows + block_tokens_ - 1) / block_tokens_);
  }
  const int64_t ring_slots = qwin ? (policy_.window + G - 1) / G : 1;
  size_t per_layer = static_cast<size_t>(new_blocks) * pool_.block_bytes(block_tokens_);
  if (needs_ring)
    per_layer += qwin ? static_cast<size_t>(ring_slots) * pool_.block_bytes(G, types.win_k, types.win_v)
                      : pool_.block_bytes(policy_.window, types.win_k, types.win_v);
  KVDType sk = to_blocks ? stage_type(types.ref_k) : stage_type(types.win_k);
  KVDType sv = to_blocks ? stage_type(types.ref_v) : stage_type(types.win_v);
  if (needs_stage) per_layer += pool_.block_bytes(G, sk, sv);
  size_t need_bytes = static_cast<size_t>(layers) * per_layer;
  const size_t freed = drop_ref_stage ? static_cast<size_t>(layers) * pool_.block(stage_[0]).bytes : 0;
  if (!pool_.can_allocate(need_bytes > freed ? need_bytes - freed : 0))
    throw Error(Error::Kind::OutOfMemory, "KV pool cannot hold " + std::to_string(n) + " more tokens for sequence " +
                                              std::to_string(id_) + " (" + std::to_string(need_bytes) + " bytes; " +
                                              std::to_string(pool_.bytes_in_use()) + " of " +
                                              std::to_string(pool_.capacity_bytes()) + " in use)");
  for (int64_t l = 0; l < layers; ++l) {
    const auto li = static_cast<size_t>(l);
    if (drop_ref_stage) {
      // The reference's last, partial group: quantise what it holds, then free the staging.
      if (block_done_[li] < reference_len_)
        quantize_stage(l, reference_len_ - block_done_[li], blocks_[li][static_cast<size_t>(block_done_[li] / G)]);
      block_done_[li] = reference_len_;
      pool_.release(stage_[li]);
      stage_[li] = -1;
    }
    for (int64_t b = 0; b < new_blocks; ++b) blocks_[li].push_back(pool_.allocate(id_, l, block_tokens_));
    if (needs_ring)
      for (int64_t s = 0; s < ring_slots; ++s)
        ring_[li].push_back(pool_.allocate(id_, l, qwin ? G : policy_.window, types.win_k, types.win_v));
    if (needs_stage) stage_[li] = pool_.allocate(id_, l, G, sk, sv);
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

void SequenceKV::quantize_stage(int64_t layer, int64_t rows, int64_t dst) {
  const KVLayout& lay = pool_.layout();
  const KVBlock& s = pool_.block(stage_[static_cast<size_t>(layer)]);
  const KVBlock& d = pool_.block(dst);
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, vg = lay.value_group();
  std::vector<float> x(static_cast<size_t>(rows * D)), row(static_cast<size_t>(lay.row_elems()));
  std::vector<uint8_t> codes(kv_row_bytes(KVDType::Q8, vg));
  const DType sk = kernels::kv_float_dtype(s.k_type), sv = kernels::kv_float_dtype(s.v_type);
  for (int64_t h = 0; h < H; ++h) {
    const uint8_t* src = s.k + static_cast<size_t>(h) * s.k_head_stride;
    uint8_t* out = d.k + static_cast<size_t>(h) * d.k_head_stride;
    if (kv_quantized(d.k_type)) {
      convert_to_f32(sk, src, x.data(), rows * D);
      kernels::quantize_key_group(d.k_type, x.data(), rows, D, out,
                                  d.k_params + h * kernels::kv_params_per_group(d.k_type) * D);
    } else {
      std::copy_n(src, static_cast<size_t>(rows) * kv_row_bytes(d.k_type, D), out);
    }
  }
  // Values: per token, in groups of vg channels that may span heads.
  const size_t svb = kv_row_bytes(s.v_type, D), dvb = kv_row_bytes(d.v_type, D);
  const int64_t groups = lay.row_elems() / vg, np = kernels::kv_params_per_group(d.v_type);
  for (int64_t r = 0; r < rows; ++r) {
    if (!kv_quantized(d.v_type)) {
      for (int64_t h = 0; h < H; ++h)
        std::copy_n(s.v + static_cast<size_t>(h) * s.v_head_stride + static_cast<size_t>(r) * svb, dvb,
                    d.v + static_cast<size_t>(h) * d.v_head_stride + static_cast<size_t>(r) * dvb);
      continue;
    }
    for (int64_t h = 0; h < H; ++h)
      convert_to_f32(sv, s.v + static_cast<size_t>(h) * s.v_head_stride + static_cast<size_t>(r) * svb,
                     row.data() + h * D, D);
    for (int64_t g = 0; g < groups; ++g) {
      kernels::quantize_value_group(d.v_type, row.data() + g * vg, vg, codes.data(),
                                    d.v_params + (r * groups + g) * np);
      // Scatter the group's codes to the head rows it covers (codes of consecutive channels are
      // contiguous in bytes, q4 included: groups and heads hold an even number of channels).
      for (int64_t c = g * vg; c < (g + 1) * vg;) {
        const int64_t h = c / D, in_head = c % D, n = std::min(D - in_head, (g + 1) * vg - c);
        const size_t off = kv_row_bytes(d.v_type, c - g * vg), len = kv_row_bytes(d.v_type, n);
        std::copy_n(codes.data() + off, len,
                    d.v + static_cast<size_t>(h) * d.v_head_stride + static_cast<size_t>(r) * dvb +
                        kv_row_bytes(d.v_type, in_head));
        c += n;
      }
    }
  }
}

void SequenceKV::store(int64_t layer, int64_t pos, const float* k, const float* v) {
  if (pos < 0 || pos >= length_) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " not appended");
  const KVLayout& lay = pool_.layout();
  const int64_t G = kKVKeyGroup, D = lay.head_dim;
  const auto li = static_cast<size_t>(layer);
  const bool blocks = in_blocks(pos);
  const bool staged = blocks ? blocks_quantized() : window_quantized();
  if (!staged) {
    const Row r = row(layer, pos);
    const KVBlock& b = pool_.block(blocks ? blocks_[li][static_cast<size_t>(pos / block_tokens_)] : ring_[li][0]);
    const DType kt = kernels::kv_float_dtype(b.k_type), vt = kernels::kv_float_dtype(b.v_type);
    for (int64_t h = 0; h < lay.n_kv_heads; ++h) {
      convert_from_f32(kt, k + h * D, r.k + static_cast<size_t>(h) * b.k_head_stride, D);
      convert_from_f32(vt, v + h * D, r.v + static_cast<size_t>(h) * b.v_head_stride, D);
    }
    return;
  }
  const int64_t j = blocks ? pos : pos - reference_len_;  // index within the region
  const KVBlock& s = pool_.block(stage_[li]);
  const int64_t row = j % G;
  const size_t kb = kv_row_bytes(s.k_type, D), vb = kv_row_bytes(s.v_type, D);
  for (int64_t h = 0; h < lay.n_kv_heads; ++h) {
    convert_from_f32(kernels::kv_float_dtype(s.k_type), k + h * D,
                     s.k + static_cast<size_t>(h) * s.k_head_stride + static_cast<size_t>(row) * kb, D);
    convert_from_f32(kernels::kv_float_dtype(s.v_type), v + h * D,
                     s.v + static_cast<size_t>(h) * s.v_head_stride + static_cast<size_t>(row) * vb, D);
  }
  if (row != G - 1) return;
  const int64_t group = j / G;
  if (blocks) {
    quantize_stage(layer, G, blocks_[li][static_cast<size_t>(group)]);
    block_done_[li] = j + 1;
  } else {
    quantize_stage(layer, G, ring_[li][static_cast<size_t>(group) % ring_[li].size()]);
    window_done_[li] = j + 1;
  }
}

SequenceKV::Row SequenceKV::row(int64_t layer, int64_t pos) const {
  if (pos < 0 || pos >= length_) throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " not appended");
  const bool blocks = in_blocks(pos);
  if (blocks ? blocks_quantized() : window_quantized())
    throw Error(Error::Kind::Internal, "KV position " + std::to_string(pos) + " is in a quantised region");
  int64_t id, row;
  if (blocks) {
    id = blocks_[static_cast<size_t>(layer)][static_cast<size_t>(pos / block_tokens_)];
    row = pos % block_tokens_;
  } else {
    // Ring slot of generated token j. Within a chunk longer than the window, slots are reused in
    // position order (see the class comment), so no eviction check is possible here.
    int64_t j = pos - reference_len_;
    id = ring_[static_cast<size_t>(layer)][0];
    row = j % policy_.window;
  }
  const KVBlock& b = pool_.block(id);
  const size_t kb = kv_row_bytes(b.k_type, pool_.layout().head_dim), vb = kv_row_bytes(b.v_type, pool_.layout().head_dim);
  return {b.k + static_cast<size_t>(row) * kb, b.v + static_cast<size_t>(row) * vb, b.k_head_stride};
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
  sp.k_params = b.k_params;
  sp.v_param_stride = static_cast<size_t>(lay.row_elems() / vg * kernels::kv_params_per_group(b.v_type));
  sp.v_params = b.v_params + first * sp.v_param_stride;
  sp.v_group = vg;
  return sp;
}

void SequenceKV::visible_spans(int64_t layer, int64_t pos, std::vector<kernels::KVSpan>& out) const {
  const auto li = static_cast<size_t>(layer);
  const auto& blocks = blocks_[li];
  // Rows held in blocks that this query may see: causal up to pos, and never past the reference
  // under rswa (generated tokens live in the ring there).
  int64_t block_rows = policy_.kind == KVPolicyKind::Full ? pos + 1 : std::min(pos + 1, reference_len_);
  const bool qb = blocks_quantized();
  for (size_t i = 0; static_cast<int64_t>(i) * block_tokens_ < block_rows; ++i) {
    const int64_t start = static_cast<int64_t>(i) * block_tokens_;
    const int64_t rows = std::min(block_tokens_, block_rows - start);
    // A group not yet quantised is read from the staging block.
    const bool staged = qb && start >= block_done_[li];
    out.push_back(span_of(pool_.block(staged ? stage_[li] : blocks[i]), 0, rows));
  }
  if (policy_.kind != KVPolicyKind::RSwa || pos < reference_len_) return;
  // Generated token j = pos - P sees generated tokens max(0, j-W+1)..j.
  const int64_t j = pos - reference_len_, W = policy_.window;
  if (!window_quantized()) {
    // While j < W they are ring rows 0..j; after that the whole ring (the rows of older tokens were
    // overwritten in order).
    out.push_back(span_of(pool_.block(ring_[li][0]), 0, std::min(j + 1, W)));
    return;
  }
  const int64_t G = kKVKeyGroup, lo = std::max<int64_t>(0, j - W + 1);
  const auto slots = static_cast<int64_t>(ring_[li].size());
  for (int64_t g = lo / G; g <= j / G; ++g) {
    const int64_t first = std::max(lo, g * G) - g * G, last = std::min(j, g * G + G - 1) - g * G;
    const bool quantised = g * G < window_done_[li];
    const int64_t id = quantised ? ring_[li][static_cast<size_t>(g % slots)] : stage_[li];
    out.push_back(span_of(pool_.block(id), first, last - first + 1));
  }
}

size_t SequenceKV::visible_bytes(int64_t pos) const {
  const KVLayout& lay = pool_.layout();
  const auto H = static_cast<size_t>(lay.n_kv_heads), D = static_cast<size_t>(lay.head_dim);
  std::vector<kernels::KVSpan> spans;
  for (int64_t l = 0; l < lay.n_layers; ++l) visible_spans(l, pos, spans);
  size_t bytes = 0;
  for (const kernels::KVSpan& s : spans) {
    const auto T = static_cast<size_t>(s.tokens);
    bytes += T * H * (kv_row_bytes(s.k_type, lay.head_dim) + kv_row_bytes(s.v_type, lay.head_dim));
    bytes += H * static_cast<size_t>(kernels::kv_params_per_group(s.k_type)) * D * 2 + T * s.v_param_stride * 2;
  }
  return bytes;
}

int64_t SequenceKV::cached_tokens() const {
  if (policy_.kind == KVPolicyKind::Full) return length_;
  return reference_len_ + std::min(generated_length(), policy_.window);
}

}  // namespace folio
