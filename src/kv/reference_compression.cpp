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

namespace {
// Compression pools scores over this many rows each side before choosing (SnapKV's kernel of 7).
constexpr int64_t kKeepPoolRadius = 3;
}  // namespace

ReferenceCompressor::ReferenceCompressor(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, double keep, int64_t observe)
    : n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim), capacity_(observe), keep_(keep) {}

void ReferenceCompressor::observe(int64_t layer, int64_t pos, const float* q, int64_t n_heads) {
  if (!observed_) observed_ = std::make_unique<ObservedQueries>(n_layers_, capacity_, n_heads * head_dim_);
  observed_->add(layer, pos, q);
}

std::vector<size_t> ReferenceCompressor::compress(std::span<const Segment> segments, const ReadRows& read, const KeepRows& write) {
  done_ = true;
  if (!observed_) return {};
  const int64_t H = n_kv_heads_, D = head_dim_, group = observed_->width() / (H * D);
  const int64_t observed_from = observed_->first_position();
  // Per segment: its rows before the observed tokens may go (keep of them stay), the observed ones
  // stay. Segments that lose at least one row are the targets.
  const size_t n = segments.size();
  std::vector<int64_t> open_rows(n), counts(n);
  std::vector<size_t> targets;
  for (size_t i = 0; i < n; ++i) {
    const Segment& s = segments[i];
    open_rows[i] = std::clamp<int64_t>(observed_from - s.first, 0, s.length);
    counts[i] = static_cast<int64_t>(std::ceil(keep_ * static_cast<double>(open_rows[i]))) + (s.length - open_rows[i]);
    if (s.live && kept_rows(i) < 0 && counts[i] < s.length) targets.push_back(i);
  }
  if (targets.empty()) return {};
  std::vector<std::vector<float>> k(n), v(n);
  std::vector<std::vector<std::vector<int64_t>>> keep(n, std::vector<std::vector<int64_t>>(static_cast<size_t>(H)));
  std::vector<float> keys;
  std::vector<int64_t> positions;
  for (size_t l = 0; l < static_cast<size_t>(n_layers_); ++l) {
    // Every live row of this layer, read before any of them is replaced.
    positions.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!segments[i].live) continue;
      read(i, l, k[i], v[i]);
      for (int64_t r = 0; r < segments[i].length; ++r) positions.push_back(segments[i].first + r);
    }
    for (int64_t h = 0; h < H; ++h) {
      keys.clear();
      for (size_t i = 0; i < n; ++i)
        if (segments[i].live) keys.insert(keys.end(), k[i].begin() + h * segments[i].length * D, k[i].begin() + (h + 1) * segments[i].length * D);
      const std::vector<float> mass = attention_mass(*observed_, static_cast<int64_t>(l), h, group, D, keys.data(), positions);
      size_t off = 0;
      for (size_t i = 0; i < n; ++i) {
        if (!segments[i].live) continue;
        const auto len = static_cast<size_t>(segments[i].length), open = static_cast<size_t>(open_rows[i]);
        if (std::find(targets.begin(), targets.end(), i) != targets.end()) {
          std::vector<int64_t>& rows = keep[i][static_cast<size_t>(h)];
          rows = select_rows(std::span<const float>(mass).subspan(off, open), counts[i] - static_cast<int64_t>(len - open), kKeepPoolRadius);
          for (auto r = static_cast<int64_t>(open); r < static_cast<int64_t>(len); ++r) rows.push_back(r);  // observed: kept
        }
        off += len;
      }
    }
    for (size_t i : targets) write(i, l, keep[i], k[i], v[i]);
  }
  if (kept_.size() < n) kept_.resize(n, -1);
  for (size_t i : targets) {
    kept_[i] = counts[i];
    dropped_ += segments[i].length - counts[i];
  }
  return targets;
}

}  // namespace folio
