#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace folio {

int32_t argmax(std::span<const float> logits) {
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best < 0 ? 0 : best;
}

Sampler::Sampler(SamplingParams p) : p_(p), rng_(p.seed) {
  FOLIO_CHECK_INPUT(std::isfinite(p.temperature) && p.temperature >= 0.f,
                    "sampling temperature must be a finite value >= 0, got " + std::to_string(p.temperature));
  FOLIO_CHECK_INPUT(p.top_k >= 0, "sampling top_k must be >= 0, got " + std::to_string(p.top_k));
  FOLIO_CHECK_INPUT(p.top_p > 0.f && p.top_p <= 1.f, "sampling top_p must be in (0, 1], got " + std::to_string(p.top_p));
}

int32_t Sampler::sample(std::span<const float> logits) {
  FOLIO_CHECK_INPUT(!logits.empty(), "cannot sample from empty logits");
  if (p_.temperature == 0.f) return argmax(logits);

  // Candidates: finite or +inf logits. +inf dominates everything else, so keep only those.
  auto& c = scratch_;
  c.clear();
  bool any_pos_inf = false;
  for (size_t i = 0; i < logits.size(); ++i) any_pos_inf |= logits[i] == INFINITY;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == -INFINITY) continue;
    if (any_pos_inf && l != INFINITY) continue;
    c.emplace_back(any_pos_inf ? 0.f : l, static_cast<int32_t>(i));
  }
  if (c.empty()) return argmax(logits);

  // Descending logit, ascending index on ties: the order top-k and top-p cut in.
  auto before = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  const bool need_order = p_.top_k > 0 || p_.top_p < 1.f;
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < c.size()) {
    std::partial_sort(c.begin(), c.begin() + p_.top_k, c.end(), before);
    c.resize(p_.top_k);
  } else if (need_order) {
    std::sort(c.begin(), c.end(), before);
  }

  float max_l = c[0].first;
  for (const auto& e : c) max_l = std::max(max_l, e.first);
  std::vector<double> prob(c.size());
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    prob[i] = std::exp(static_cast<double>(c[i].first - max_l) / p_.temperature);
    sum += prob[i];
  }
  size_t keep = c.size();
  if (p_.top_p < 1.f) {
    double acc = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      acc += prob[i] / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += prob[i];
  }

  // u in [0, 1) from the top 53 bits: identical on every platform.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * sum;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return c[i].second;
  }
  return c[keep - 1].second;  // rounding left u just past the last bucket
}

}  // namespace folio
