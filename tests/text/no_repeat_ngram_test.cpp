#include "text/no_repeat_ngram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.h"

namespace folio {
namespace {

using Ids = std::vector<int32_t>;

TEST(NoRepeatNGram, BansTheTokenThatWouldRepeatAnNGram) {
  NoRepeatNGram g(3, 100);
  // Prefix (1, 2) was followed by 3 before.
  EXPECT_EQ(g.banned(Ids{1, 2, 3, 1, 2}), (Ids{3}));
  // Two earlier continuations of (1, 2).
  EXPECT_EQ(g.banned(Ids{1, 2, 3, 1, 2, 4, 1, 2}), (Ids{3, 4}));
  EXPECT_TRUE(g.banned(Ids{1, 2}).empty());  // shorter than n
  EXPECT_TRUE(g.banned(Ids{1, 2, 3}).empty());
  // n == 2: the last n-gram itself counts: (2, 1) occurred, and the prefix is (2).
  EXPECT_EQ(NoRepeatNGram(2, 100).banned(Ids{1, 2, 1, 2}), (Ids{1}));
}

TEST(NoRepeatNGram, WindowBoundaryNGramMustLieInsideTheWindow) {
  const Ids t = {1, 2, 3, 9, 9, 9, 1, 2};  // (1,2,3) starts at 0, length 8
  EXPECT_EQ(NoRepeatNGram(3, 8).banned(t), (Ids{3}));
  EXPECT_TRUE(NoRepeatNGram(3, 7).banned(t).empty());  // window starts at index 1
  // The window also limits the recent n-grams: window 3 only holds (9, 1, 2).
  EXPECT_TRUE(NoRepeatNGram(3, 3).banned(Ids{1, 2, 5, 1, 2}).empty());
  EXPECT_EQ(NoRepeatNGram(3, 5).banned(Ids{1, 2, 5, 1, 2}), (Ids{5}));
  // A window shorter than n never bans anything.
  EXPECT_TRUE(NoRepeatNGram(3, 2).banned(Ids{7, 7, 7, 7}).empty());
}

TEST(NoRepeatNGram, UnigramBansEveryTokenInTheWindow) {
  EXPECT_EQ(NoRepeatNGram(1, 3).banned(Ids{5, 6, 7, 8}), (Ids{6, 7, 8}));
  EXPECT_EQ(NoRepeatNGram(1, 10).banned(Ids{5}), (Ids{5}));
}

TEST(NoRepeatNGram, WhitelistIsNeverBanned) {
  NoRepeatNGram g(2, 100, {128821, 128822});  // DeepSeek-OCR's <td>, </td>
  EXPECT_TRUE(g.banned(Ids{128821, 128822, 128821}).empty());
  EXPECT_EQ(g.banned(Ids{5, 6, 5}), (Ids{6}));
}

TEST(NoRepeatNGram, ApplySetsOnlyBannedLogitsToMinusInfinity) {
  NoRepeatNGram g(2, 10);
  std::vector<float> logits = {0.5f, 1.f, 2.f, 3.f};
  g.apply(Ids{1, 2, 1}, logits);
  EXPECT_EQ(logits[0], 0.5f);
  EXPECT_EQ(logits[1], 1.f);
  EXPECT_EQ(logits[2], -INFINITY);
  EXPECT_EQ(logits[3], 3.f);
  EXPECT_THROW(g.apply(Ids{1, 9, 1}, logits), Error);  // 9 is not a logit index
}

TEST(NoRepeatNGram, RejectsNonPositiveSizes) {
  for (auto [n, w] : {std::pair{0, 5}, std::pair{3, 0}, std::pair{-1, -1}}) {
    try {
      NoRepeatNGram g(n, w);
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find(n < 1 ? "size" : "window"), std::string::npos) << e.what();
    }
  }
}

// Independent formulation: t is banned iff (last n-1 tokens, t) occurs as a contiguous run inside
// the last `window` tokens.
Ids reference(const Ids& s, int n, int window, const std::set<int32_t>& white) {
  std::set<int32_t> out;
  if (static_cast<int>(s.size()) < n) return {};
  const Ids recent(s.end() - std::min<size_t>(s.size(), window), s.end());
  for (int32_t t = 0; t < 6; ++t) {
    Ids gram(s.end() - (n - 1), s.end());
    gram.push_back(t);
    if (std::search(recent.begin(), recent.end(), gram.begin(), gram.end()) != recent.end() && !white.count(t))
      out.insert(t);
  }
  return Ids(out.begin(), out.end());
}

TEST(NoRepeatNGram, MatchesIndependentFormulationOnRandomSequences) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + rng() % 4, window = 1 + rng() % 12, len = rng() % 20;
    Ids s(len);
    for (auto& x : s) x = rng() % 6;  // small alphabet: many repeats
    const std::set<int32_t> white = {static_cast<int32_t>(rng() % 8)};
    EXPECT_EQ(NoRepeatNGram(n, window, Ids(white.begin(), white.end())).banned(s), reference(s, n, window, white))
        << "n=" << n << " window=" << window << " len=" << len;
  }
}

}  // namespace
}  // namespace folio
