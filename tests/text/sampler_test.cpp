#include "text/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"

namespace folio {
namespace {

std::vector<float> random_logits(std::mt19937& rng, int n) {
  std::normal_distribution<float> d(0.f, 3.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(Sampler, GreedyTakesLowestIndexMaxAndIgnoresNaN) {
  Sampler s({});
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{NAN, 2, NAN, 1}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{NAN, NAN}), 0);
  EXPECT_EQ(s.sample(std::vector<float>{-INFINITY, -INFINITY, -5}), 2);
  EXPECT_EQ(s.sample(std::vector<float>{-1, INFINITY, INFINITY}), 1);
  EXPECT_THROW(s.sample(std::vector<float>{}), Error);
}

// The vectorised argmax against a plain scan, on lengths around its 8 lanes and 64-element stretches,
// with ties, NaN, and infinities placed anywhere.
TEST(Sampler, GreedyMatchesAScanOnLongRows) {
  auto scan = [](const std::vector<float>& v) {
    int32_t best = -1;
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isnan(v[i]) && (best < 0 || v[i] > v[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
    return best < 0 ? 0 : best;
  };
  std::mt19937 rng(5);
  const float specials[] = {NAN, INFINITY, -INFINITY, 9.f, -0.f};
  for (int n : {1, 7, 8, 9, 63, 64, 65, 200, 1031}) {
    for (int trial = 0; trial < 40; ++trial) {
      auto v = random_logits(rng, n);
      for (int k = 0; k < trial % 6; ++k) v[rng() % n] = specials[rng() % 5];
      if (trial % 7 == 0) std::fill(v.begin(), v.end(), NAN);
      if (trial % 11 == 0) std::fill(v.begin(), v.end(), -INFINITY);
      EXPECT_EQ(argmax(v), scan(v)) << "n " << n << " trial " << trial;
    }
  }
}

TEST(Sampler, DeterministicPerSeed) {
  std::mt19937 rng(1);
  const auto logits = random_logits(rng, 50);
  auto draw = [&](uint64_t seed) {
    Sampler s({.temperature = 1.5f, .top_k = 0, .top_p = 1.f, .seed = seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  std::mt19937 rng(2);
  Sampler k1({.temperature = 2.f, .top_k = 1, .top_p = 1.f, .seed = 9});
  Sampler p0({.temperature = 2.f, .top_k = 0, .top_p = 1e-6f, .seed = 9});
  for (int t = 0; t < 100; ++t) {
    auto logits = random_logits(rng, 64);
    if (t % 3 == 0) logits[7] = logits[20] = 50.f;  // ties must go to the lower index
    EXPECT_EQ(k1.sample(logits), argmax(logits));
    EXPECT_EQ(p0.sample(logits), argmax(logits));
  }
}

// Frequencies of 200k draws against the softmax; 5 sigma is about 0.006 here.
void expect_distribution(SamplingParams p, const std::vector<float>& logits, const std::vector<double>& want) {
  Sampler s(p);
  std::vector<int> count(logits.size(), 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++count[s.sample(logits)];
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(count[i] / double(n), want[i], 0.01) << "index " << i;
}

TEST(Sampler, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> l = {0.f, 1.f, 2.f};
  auto softmax = [&](double t, std::vector<int> keep) {
    std::vector<double> p(l.size(), 0.0);
    double z = 0;
    for (int i : keep) z += std::exp(l[i] / t);
    for (int i : keep) p[i] = std::exp(l[i] / t) / z;
    return p;
  };
  expect_distribution({.temperature = 1.f, .seed = 1}, l, softmax(1, {0, 1, 2}));
  expect_distribution({.temperature = 2.f, .seed = 2}, l, softmax(2, {0, 1, 2}));
  // top_k 2 drops index 0.
  expect_distribution({.temperature = 1.f, .top_k = 2, .seed = 3}, l, softmax(1, {1, 2}));
  // Softmax(1) is {0.090, 0.245, 0.665}: top_p 0.7 needs the two largest, top_p 0.6 only one.
  expect_distribution({.temperature = 1.f, .top_p = 0.7f, .seed = 4}, l, softmax(1, {1, 2}));
  expect_distribution({.temperature = 1.f, .top_p = 0.6f, .seed = 5}, l, softmax(1, {2}));
  // Banned (-inf) and NaN entries are never drawn.
  expect_distribution({.temperature = 1.f, .seed = 6}, {0.f, -INFINITY, NAN, 0.f}, {0.5, 0, 0, 0.5});
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_THROW(Sampler({.temperature = -1.f}), Error);
  EXPECT_THROW(Sampler({.temperature = NAN}), Error);
  EXPECT_THROW(Sampler({.temperature = 1.f, .top_k = -1}), Error);
  EXPECT_THROW(Sampler({.temperature = 1.f, .top_p = 0.f}), Error);
  EXPECT_THROW(Sampler({.temperature = 1.f, .top_p = 1.5f}), Error);
  try {
    Sampler({.temperature = 1.f, .top_p = 2.f});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_p"), std::string::npos);
  }
}

}  // namespace
}  // namespace folio
