#include "kv/quest_selector.h"

#include <algorithm>
#include <cmath>

namespace folio {

void UnitBounds::cut(int64_t segment_length, const std::vector<int64_t>& marks, int64_t unit_tokens) {
  length = segment_length;
  std::vector<int64_t> edges = {0};
  for (int64_t m : marks)
    if (m > 0 && m < length) edges.push_back(m);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  edges.push_back(length);
  starts.clear();
  for (size_t m = 0; m + 1 < edges.size(); ++m)
    for (int64_t a = edges[m]; a < edges[m + 1]; a += unit_tokens) starts.push_back(a);
}

void UnitBounds::reset(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim) {
  bounds.assign(static_cast<size_t>(n_layers), {});
  for (std::vector<float>& layer : bounds) {
    layer.resize(starts.size() * static_cast<size_t>(n_kv_heads * 2 * head_dim));
    for (size_t i = 0; i < layer.size(); i += static_cast<size_t>(2 * head_dim)) {
      std::fill_n(layer.begin() + static_cast<std::ptrdiff_t>(i), head_dim, INFINITY);
      std::fill_n(layer.begin() + static_cast<std::ptrdiff_t>(i) + head_dim, head_dim, -INFINITY);
    }
  }
}

void UnitBounds::widen(int64_t layer, size_t u, int64_t kv_head, int64_t n_kv_heads, int64_t head_dim, const float* keys, int64_t rows) {
  float* mn = bounds[static_cast<size_t>(layer)].data() + ((static_cast<int64_t>(u) * n_kv_heads + kv_head) * 2) * head_dim;
  float* mx = mn + head_dim;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < head_dim; ++c) {
      mn[c] = std::min(mn[c], keys[r * head_dim + c]);
      mx[c] = std::max(mx[c], keys[r * head_dim + c]);
    }
}

namespace {

struct ScoredUnit {
  float score;
  size_t segment, unit;
};

// The Quest bound of every live unit for the query.
void score_units(std::span<const UnitBounds* const> segments, const UnitQuery& qy, std::vector<ScoredUnit>& units) {
  const int64_t D = qy.head_dim;
  size_t first = segments.size(), last = 0;
  for (size_t si = 0; si < segments.size(); ++si)
    if (segments[si]) first = std::min(first, si), last = si;
  auto listed = [](std::span<const size_t> set, size_t si) { return std::find(set.begin(), set.end(), si) != set.end(); };
  for (size_t si = 0; si < segments.size(); ++si) {
    if (!segments[si]) continue;
    const bool candidate = qy.candidates.empty() || si == first || si == last || listed(qy.candidates, si) || listed(qy.focus, si);
    if (!candidate) continue;
    const UnitBounds& s = *segments[si];
    const std::vector<float>& b = s.bounds[static_cast<size_t>(qy.layer)];
    for (size_t u = 0; u < s.starts.size(); ++u) {
      const float* mn = b.data() + ((static_cast<int64_t>(u) * qy.n_kv_heads + qy.kv_head) * 2) * D;
      const float* mx = mn + D;
      float score = 0;
      for (int64_t g = 0; g < qy.group; ++g)
        for (int64_t c = 0; c < D; ++c) score += std::max(qy.q[g * D + c] * mn[c], qy.q[g * D + c] * mx[c]);
      units.push_back({score, si, u});
    }
  }
}

}  // namespace

void select_units(std::span<const UnitBounds* const> segments, const UnitQuery& query, std::vector<SelectedRows>& out) {
  thread_local std::vector<ScoredUnit> units;  // kept between queries: no allocation per step
  units.clear();
  score_units(segments, query, units);
  // Always read: the focus segments' units, the first and the last unit.
  size_t forced = 0;
  for (ScoredUnit& u : units)
    if (std::find(query.focus.begin(), query.focus.end(), u.segment) != query.focus.end()) {
      u.score = INFINITY;
      ++forced;
    }
  if (!units.empty()) {
    forced += units.front().score != INFINITY;
    units.front().score = INFINITY;
    forced += units.back().score != INFINITY;
    units.back().score = INFINITY;
  }
  const auto keep = std::min(units.size(), static_cast<size_t>(query.top_k) + forced);
  std::nth_element(units.begin(), units.begin() + static_cast<std::ptrdiff_t>(keep), units.end(),
                   [](const ScoredUnit& a, const ScoredUnit& b) { return a.score > b.score; });
  units.resize(keep);
  std::sort(units.begin(), units.end(), [](const ScoredUnit& a, const ScoredUnit& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.unit < b.unit;
  });
  for (size_t i = 0; i < units.size();) {
    const UnitBounds& s = *segments[units[i].segment];
    size_t j = i;
    while (j + 1 < units.size() && units[j + 1].segment == units[i].segment && units[j + 1].unit == units[j].unit + 1) ++j;
    out.push_back({units[i].segment, s.starts[units[i].unit], s.unit_end(units[j].unit)});
    i = j + 1;
  }
}

}  // namespace folio
