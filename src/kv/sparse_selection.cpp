#include "kv/sparse_selection.h"

#include <algorithm>

#include "kernels/cpu/kv_quant.h"
#include "core/dtype.h"

namespace folio {

SparseSelection::SparseSelection(const KVLayout& layout, const KVPolicy& policy)
    : n_layers_(layout.n_layers),
      n_kv_heads_(layout.n_kv_heads),
      head_dim_(layout.head_dim),
      unit_tokens_(policy.unit_tokens),
      top_k_(policy.top_k),
      read_(new std::atomic<size_t>[static_cast<size_t>(layout.n_layers * layout.n_kv_heads)]) {
  for (int64_t i = 0; i < n_layers_ * n_kv_heads_; ++i) read_[static_cast<size_t>(i)] = 0;
}

std::vector<int64_t> SparseSelection::starts_within(int64_t first, int64_t length) const {
  std::vector<int64_t> out;
  for (int64_t p : unit_starts_)
    if (p > first && p < first + length) out.push_back(p - first);
  return out;
}

// Units start at the segment's start, at the starts given inside it, and every unit_tokens after
// each; their bounds are read from the stored keys (dequantised when the reference is quantised).
void SparseSelection::summarise(std::span<const Segment> segments, int64_t block_tokens, const BlockReader& block) {
  const int64_t H = n_kv_heads_, D = head_dim_, bt = block_tokens;
  std::vector<float> keys(static_cast<size_t>(bt * D));
  std::sort(unit_starts_.begin(), unit_starts_.end());
  units_.assign(segments.size(), UnitBounds{});
  live_.assign(segments.size(), false);
  for (size_t si = 0; si < segments.size(); ++si) {
    const Segment& s = segments[si];
    live_[si] = s.live;
    std::vector<int64_t> marks;  // positions: no longer rows once compressed
    if (s.positional)
      for (int64_t p : unit_starts_) marks.push_back(p - s.first);
    UnitBounds& u = units_[si];
    u.cut(s.rows, marks, unit_tokens_);
    u.reset(n_layers_, H, D);
    if (!s.live) continue;
    for (int64_t l = 0; l < n_layers_; ++l)
      for (int64_t h = 0; h < H; ++h)
        for (size_t k = 0; k < u.starts.size(); ++k) {
          const int64_t lo = u.starts[k], hi = u.unit_end(k);
          for (int64_t i = lo / bt; i * bt < hi; ++i) {
            const KVBlock b = block(si, static_cast<size_t>(l), static_cast<size_t>(i));
            const int64_t rows = std::min(bt, s.rows - i * bt);
            const uint8_t* kh = b.k + static_cast<size_t>(h) * b.k_head_stride;
            if (kernels::kv_quantized(b.k_type))
              kernels::dequantize_key_rows(b.k_type, kh, b.k_params + h * kernels::kv_params_per_group(b.k_type) * D, rows, D, keys.data());
            else
              convert_to_f32(kernels::kv_float_dtype(b.k_type), kh, keys.data(), rows * D);
            const int64_t r0 = std::max(lo - i * bt, int64_t{0}), r1 = std::min(rows, hi - i * bt);
            u.widen(l, k, h, H, D, keys.data() + r0 * D, r1 - r0);
          }
        }
  }
  summarised_ = true;
}

void SparseSelection::forget(size_t segment) {
  if (segment < live_.size()) live_[segment] = false;
}

void SparseSelection::select(int64_t layer, int64_t kv_head, const float* q, int64_t group, std::vector<SelectedRows>& out) const {
  // Kept between queries (one per layer and KV head of every step): no allocation per step.
  thread_local std::vector<const UnitBounds*> bounds;
  bounds.clear();
  for (size_t i = 0; i < units_.size(); ++i) bounds.push_back(live_[i] ? &units_[i] : nullptr);
  select_units(bounds, {layer, kv_head, n_kv_heads_, head_dim_, q, group, top_k_, focus_, candidates_}, out);
}

void SparseSelection::record_read(int64_t layer, int64_t kv_head, size_t bytes) const {
  read_[static_cast<size_t>(layer * n_kv_heads_ + kv_head)] = bytes;
}

size_t SparseSelection::bytes_read() const {
  size_t bytes = 0;
  for (int64_t i = 0; i < n_layers_ * n_kv_heads_; ++i) bytes += read_[static_cast<size_t>(i)];
  return bytes;
}

}  // namespace folio
