// Quest selection over a reference cut into units (Tang et al., "Quest: Query-Aware Sparsity for
// Efficient Long-Context LLM Inference", 2024), as the `sparse` policy reads it.
//
// Each unit keeps, per layer and KV head, the per-channel minimum and maximum of its keys. A query q
// bounds q.k over any key inside those bounds by sum_c max(q_c min_c, q_c max_c); a generated token
// reads the units with the highest bound, plus the pages it is told to read whole, plus the first
// and last unit of the reference. Work per token is then flat in the reference's length.
//
// UnitBounds is plain data filled by its owner (SequenceKV, which knows where the keys live);
// select_units is a pure function. Neither locks: the owner writes bounds before any query reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace folio {

// The units of one reference segment and their key bounds.
struct UnitBounds {
  int64_t length = 0;                      // rows of the segment
  std::vector<int64_t> starts;             // unit starts: rows from the segment's first, ascending, the first 0
  std::vector<std::vector<float>> bounds;  // [layer] -> per unit, per KV head: min[head_dim] then max[head_dim]

  int64_t unit_end(size_t u) const { return u + 1 < starts.size() ? starts[u + 1] : length; }
  // Cuts a segment of `length` rows at `marks` (rows from its first; outside (0, length) ignored)
  // and every unit_tokens rows after the start and each mark. Precondition: unit_tokens >= 1.
  void cut(int64_t segment_length, const std::vector<int64_t>& marks, int64_t unit_tokens);
  // Sizes the bounds for every layer, unit and KV head: minima +inf, maxima -inf.
  void reset(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim);
  // Widens the bounds of unit u in (layer, kv_head) by `rows` keys of head_dim floats each.
  void widen(int64_t layer, size_t u, int64_t kv_head, int64_t n_kv_heads, int64_t head_dim, const float* keys, int64_t rows);
};

// A run of selected, adjacent units of one segment: rows [begin, end) from its first.
struct SelectedRows {
  size_t segment;
  int64_t begin, end;
};

// What one query selects.
struct UnitQuery {
  int64_t layer, kv_head, n_kv_heads, head_dim;
  const float* q;   // [group][head_dim]: the query heads that share kv_head
  int64_t group;
  int64_t top_k;    // units chosen by score, besides those always read
  std::span<const size_t> focus;  // segments read whole
  // Segments the top_k may come from (besides the first and the last live segment); empty: all.
  std::span<const size_t> candidates = {};
};

// Appends to `out` the rows the query reads among `segments` (null: a dropped segment): the top_k
// units by bound (among the candidate segments, when given), every unit of the focus segments,
// the first and last unit; in reference order,
// adjacent units merged, so that selecting every unit gives exactly the dense rows in order.
// Ties are broken by std::nth_element over a fixed order, so the result depends only on the inputs.
void select_units(std::span<const UnitBounds* const> segments, const UnitQuery& query, std::vector<SelectedRows>& out);

}  // namespace folio
