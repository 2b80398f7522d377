#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/error.h"

namespace folio {

// Two vector passes (a vocabulary of 129K took 0.2 ms a token one compare at a time): the largest
// value (NaN never wins a > test), then the first index holding it, 16 elements at a time.
int32_t argmax(std::span<const float> logits) {
  const float* x = logits.data();
  const size_t n = logits.size();
  float best = -INFINITY;
  size_t i = 0;
#if defined(__SSE2__)
  __m128 lanes[4];  // independent chains: one compare-and-select waits on the last
  for (__m128& l : lanes) l = _mm_set1_ps(-INFINITY);
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 4; ++k) {
      const __m128 v = _mm_loadu_ps(x + i + 4 * k), wins = _mm_cmpgt_ps(v, lanes[k]);
      lanes[k] = _mm_or_ps(_mm_and_ps(wins, v), _mm_andnot_ps(wins, lanes[k]));
    }
  float lane[16];
  for (int k = 0; k < 4; ++k) _mm_storeu_ps(lane + 4 * k, lanes[k]);
  for (float l : lane) best = l > best ? l : best;
#endif
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  size_t at = 0;
#if defined(__SSE2__)
  const __m128 b = _mm_set1_ps(best);
  for (; at + 16 <= n; at += 16) {
    __m128 hit = _mm_cmpeq_ps(_mm_loadu_ps(x + at), b);
    for (size_t k = 4; k < 16; k += 4) hit = _mm_or_ps(hit, _mm_cmpeq_ps(_mm_loadu_ps(x + at + k), b));
    if (_mm_movemask_ps(hit)) break;
  }
#endif
  for (; at < n; ++at)
    if (x[at] == best) return static_cast<int32_t>(at);
  return 0;  // every logit NaN (or none)
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
