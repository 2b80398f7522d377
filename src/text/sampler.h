// Sampler: picks the next token from a row of logits.
//
// temperature == 0 is greedy: the largest logit, the lowest index among equal maxima, NaNs
// ignored. Otherwise the logits are divided by the temperature, cut to the top_k largest
// (top_k 0 = all), softmaxed, cut to the smallest prefix (by descending probability, ties by
// lower index) whose probability reaches top_p, renormalised and drawn from with a
// std::mt19937_64 seeded with `seed`, so a given seed always yields the same sequence of draws
// on every platform (no std::*_distribution, whose output is implementation-defined).
// -inf and NaN logits are never sampled; if nothing else is left the greedy choice is returned.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace folio {

struct SamplingParams {
  float temperature = 0.f;
  int top_k = 0;
  float top_p = 1.f;
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws InvalidInput for a negative or non-finite temperature, a negative top_k, or a top_p
  // outside (0, 1].
  explicit Sampler(SamplingParams p);

  // Throws InvalidInput for empty logits.
  int32_t sample(std::span<const float> logits);

  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;  // reused candidate buffer
};

// Index of the largest non-NaN value, lowest index on ties; 0 if every value is NaN.
int32_t argmax(std::span<const float> logits);

}  // namespace folio
