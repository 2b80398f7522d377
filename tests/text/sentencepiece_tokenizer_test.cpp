#include "text/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"

namespace folio {
namespace {

// Ids:            0        1      2       3     4    5    6    7     8     9      10     11        12        13    14
// Scores make "bc" beat "▁a" beat "ab", and "abc" beat "▁a".
SpmVocab hand_vocab() {
  SpmVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "bc", "▁a", "abc", "<0xC3>", "<0xA9>", "aa", "<tool>"};
  v.scores = {0, 0, 0, -1, -2, -2, -2, -0.5f, -0.1f, -0.3f, -0.2f, 0, 0, -1, 0};
  v.types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 1, 4};
  return v;
}

using Ids = std::vector<int32_t>;

TEST(SentencePiece, MergesHighestScoreFirstHandDerived) {
  auto tok = make_sentencepiece_tokenizer(hand_vocab());
  // "▁abc": bc (-0.1) first, then a+bc = abc (-0.2); "▁abc" is no token.
  EXPECT_EQ(tok->encode("abc"), (Ids{3, 10}));
  // "▁a▁b": only ▁a merges.
  EXPECT_EQ(tok->encode("a b"), (Ids{9, 3, 5}));
  // "▁ab": ▁a (-0.3) beats ab (-0.5), then ▁a+b is no token.
  EXPECT_EQ(tok->encode("ab"), (Ids{9, 5}));
  // é has no token: byte fallback C3 A9.
  EXPECT_EQ(tok->encode("é"), (Ids{3, 11, 12}));
  // ü = C3 BC: C3 has a byte token, BC does not -> unk.
  EXPECT_EQ(tok->encode("ü"), (Ids{3, 11, 0}));
  EXPECT_TRUE(tok->encode("").empty());
}

TEST(SentencePiece, SpecialTokensMatchedLiterallyAndPrefixSpaceFollowsThem) {
  auto tok = make_sentencepiece_tokenizer(hand_vocab());
  EXPECT_EQ(tok->encode("<s>ab"), (Ids{1, 9, 5}));
  EXPECT_EQ(tok->encode("ab<tool>ab</s>"), (Ids{9, 5, 14, 9, 5, 2}));
  EXPECT_EQ(tok->decode(Ids{1, 9, 5}), "<s>ab");
  EXPECT_EQ(tok->decode(Ids{9, 5, 14, 9, 5, 2}), "ab<tool>ab</s>");
}

TEST(SentencePiece, NoPrefixSpaceAndLeftmostOnEqualScores) {
  SpmVocab v = hand_vocab();
  v.add_space_prefix = false;
  auto tok = make_sentencepiece_tokenizer(v);
  EXPECT_EQ(tok->encode("aaa"), (Ids{13, 4}));  // both "aa" pairs score -1: the left one merges
  EXPECT_EQ(tok->encode("abc"), (Ids{10}));
  EXPECT_EQ(tok->decode(Ids{3, 4}), " a");  // nothing is stripped without the prefix
}

TEST(SentencePiece, DecodeDropsOnlyTheAddedSpace) {
  auto tok = make_sentencepiece_tokenizer(hand_vocab());
  EXPECT_EQ(tok->encode("  a"), (Ids{3, 3, 9}));
  EXPECT_EQ(tok->decode(Ids{3, 3, 9}), "  a");
  EXPECT_EQ(tok->decode(Ids{3, 11, 12}), "é");
  EXPECT_EQ(tok->token_bytes(9), " a");
  EXPECT_EQ(tok->token_bytes(11), "\xC3");
  std::mt19937 rng(3);
  const std::vector<std::string> pool = {"a", "b", "c", " ", "é", "<s>", "<tool>", "ab", "  "};
  for (int t = 0; t < 500; ++t) {
    std::string s;
    const int n = rng() % 12;
    for (int k = 0; k < n; ++k) s += pool[rng() % pool.size()];
    EXPECT_EQ(tok->decode(tok->encode(s)), s) << "[" << s << "]";
  }
}

TEST(SentencePiece, ControlTokensAreTheControlType) {
  auto tok = make_sentencepiece_tokenizer(hand_vocab());
  EXPECT_TRUE(tok->is_control(1));    // <s>
  EXPECT_TRUE(tok->is_control(2));    // </s>
  EXPECT_FALSE(tok->is_control(0));   // <unk>: unknown, not control
  EXPECT_FALSE(tok->is_control(14));  // <tool>: user-defined text
  EXPECT_FALSE(tok->is_control(4));
  EXPECT_THROW(tok->is_control(15), Error);
}

TEST(SentencePiece, LookupsAndValidation) {
  auto tok = make_sentencepiece_tokenizer(hand_vocab());
  EXPECT_EQ(tok->vocab_size(), 15);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->token_to_id(" a"), 9);
  EXPECT_EQ(tok->token_to_id("▁a"), 9);
  EXPECT_EQ(tok->token_to_id("<s>"), 1);
  EXPECT_EQ(tok->token_to_id("\xA9"), 12);
  EXPECT_FALSE(tok->token_to_id("zz").has_value());
  EXPECT_THROW(tok->token_bytes(15), Error);

  SpmVocab bad = hand_vocab();
  bad.scores.pop_back();
  EXPECT_THROW(make_sentencepiece_tokenizer(bad), Error);
  bad = hand_vocab();
  bad.bos = 99;
  try {
    make_sentencepiece_tokenizer(bad);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("bos"), std::string::npos);
  }
  EXPECT_THROW(make_sentencepiece_tokenizer(SpmVocab{}), Error);
  bad = hand_vocab();
  bad.types[4] = 9;
  EXPECT_THROW(make_sentencepiece_tokenizer(bad), Error);
  bad = hand_vocab();
  bad.unk = -1;
  EXPECT_THROW(make_sentencepiece_tokenizer(bad)->encode("ü"), Error);  // BC: no byte token, no unk
}

}  // namespace
}  // namespace folio
