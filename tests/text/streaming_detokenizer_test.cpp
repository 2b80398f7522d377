#include <gtest/gtest.h>

#include <random>

#include "text/bpe_tokenizer.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/utf8.h"

namespace folio {
namespace {

bool valid_utf8(const std::string& s) {
  const DecodedText d = decode_utf8(s);
  for (char32_t c : d.cps)
    if (c >= kInvalidUtf8Base) return false;
  return true;
}

TEST(StreamingDetokenizer, HoldsBackSplitCharactersAndMatchesDecode) {
  auto tok = load_tokenizer_json_string(make_synthetic_bpe_tokenizer_json(1500, {{"<eos>", 1}}, 2));
  const std::string text = "Results 中文字符 😀 naïve, the end.<eos>";
  const auto ids = tok->encode(text);
  StreamingDetokenizer stream(*tok);
  std::string joined;
  bool held_back_once = false;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    EXPECT_TRUE(valid_utf8(piece)) << piece;
    if (piece.empty()) held_back_once = true;
    joined += piece;
  }
  joined += stream.flush();
  EXPECT_EQ(joined, text);
  EXPECT_TRUE(held_back_once);  // 中 etc. are several byte tokens in this small vocab
}

TEST(StreamingDetokenizer, FlushReturnsUnfinishedBytesAndResets) {
  auto tok = load_tokenizer_json_string(make_synthetic_bpe_tokenizer_json(1000, {}, 2));
  const auto ids = tok->encode("中");
  ASSERT_GT(ids.size(), 1u);
  StreamingDetokenizer stream(*tok);
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.flush(), tok->token_bytes(ids[0]));
  EXPECT_EQ(stream.flush(), "");
  std::string s;
  for (int32_t id : ids) s += stream.push(id);
  EXPECT_EQ(s, "中");
}

TEST(StreamingDetokenizer, SentencePieceDropsOnlyTheFirstPrefixSpace) {
  SpmVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "▁", "a", "▁a", "<0xC3>", "<0xA9>"};
  v.types = {2, 3, 3, 1, 1, 1, 6, 6};
  auto tok = make_sentencepiece_tokenizer(v);
  const std::vector<int32_t> ids = {5, 3, 6, 7, 5, 5};  // " a", " ", C3, A9, " a", " a"
  StreamingDetokenizer stream(*tok);
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(stream.push(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", " ", "", "é", " a", " a"}));
  EXPECT_EQ(stream.flush(), "");
  EXPECT_EQ(tok->decode(ids), "a é a a");
}

// With the prompt's last token as context, the first generated word keeps its space (what
// llama.cpp prints after a prompt), and the rest is unchanged.
TEST(StreamingDetokenizer, ContextKeepsTheFirstWordsSpace) {
  SpmVocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "▁boy", "▁named", "▁Tim", "<0xC3>", "<0xA9>"};
  v.types = {2, 3, 3, 1, 1, 1, 6, 6};
  auto tok = make_sentencepiece_tokenizer(v);
  StreamingDetokenizer plain(*tok);
  EXPECT_EQ(plain.push(4), "named");
  StreamingDetokenizer cont(*tok, {3});  // the prompt ended with " boy"
  std::string out;
  for (int32_t id : {4, 5, 6, 7}) out += cont.push(id);
  out += cont.flush();
  EXPECT_EQ(out, " named Tim\xC3\xA9");
  EXPECT_EQ(tok->decode(std::vector<int32_t>{3}) + out, tok->decode(std::vector<int32_t>{3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace folio
