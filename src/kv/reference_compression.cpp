#include "kv/reference_compression.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace folio {

ObservedQueries::ObservedQueries(int64_t layers, int64_t capacity, int64_t width)
    : layers_(layers),
      capacity_(capacity),
      width_(width),
      added_(static_cast<size_t>(layers), 0),
      pos_(static_cast<size_t>(layers * capacity)),
      q_(static_cast<size_t>(layers * capacity * width)) {}

void ObservedQueries::add(int64_t layer, int64_t pos, const float* q) {
  int64_t& n = added_[static_cast<size_t>(layer)];
  const size_t s = slot(layer, n % capacity_);
  pos_[s] = pos;
  std::copy_n(q, width_, q_.data() + s * static_cast<size_t>(width_));
  ++n;
}

int64_t ObservedQueries::count(int64_t layer) const { return std::min(added_[static_cast<size_t>(layer)], capacity_); }

int64_t ObservedQueries::first_position() const {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (int64_t l = 0; l < layers_; ++l)
    for (int64_t i = 0; i < count(l); ++i) first = std::min(first, position(l, i));
  return first;
}

std::vector<float> attention_mass(const ObservedQueries& obs, int64_t layer, int64_t kv_head, int64_t group,
                                  int64_t head_dim, const float* keys, std::span<const int64_t> positions) {
  const auto rows = positions.size();
  std::vector<float> mass(rows, 0.f), logit(rows);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (int64_t i = 0; i < obs.count(layer); ++i) {
    const int64_t at = obs.position(layer, i);
    for (int64_t g = 0; g < group; ++g) {
      const float* q = obs.query(layer, i) + (kv_head * group + g) * head_dim;
      float top = -std::numeric_limits<float>::infinity();
      for (size_t r = 0; r < rows; ++r) {
        if (positions[r] > at) continue;  // causal: a query sees rows up to its own position
        float dot = 0.f;
        for (int64_t c = 0; c < head_dim; ++c) dot += q[c] * keys[r * static_cast<size_t>(head_dim) + static_cast<size_t>(c)];
        logit[r] = dot * scale;
        top = std::max(top, logit[r]);
      }
      double sum = 0.0;
      for (size_t r = 0; r < rows; ++r)
        if (positions[r] <= at) sum += std::exp(static_cast<double>(logit[r] - top));
      if (sum <= 0.0) continue;
      for (size_t r = 0; r < rows; ++r)
        if (positions[r] <= at) mass[r] += static_cast<float>(std::exp(static_cast<double>(logit[r] - top)) / sum);
    }
  }
  return mass;
}

std::vector<int64_t> select_rows(std::span<const float> scores, int64_t count, int64_t radius) {
  const auto n = static_cast<int64_t>(scores.size());
  std::vector<float> pooled(scores.size());
  for (int64_t r = 0; r < n; ++r) {
    float m = scores[static_cast<size_t>(r)];
    for (int64_t j = std::max<int64_t>(0, r - radius); j <= std::min(n - 1, r + radius); ++j) m = std::max(m, scores[static_cast<size_t>(j)]);
    pooled[static_cast<size_t>(r)] = m;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Best pooled score first; among equals, the higher raw score, then the earlier row.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
    if (pooled[ia] != pooled[ib]) return pooled[ia] > pooled[ib];
    return scores[ia] > scores[ib];
  });
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace folio
