#include "text/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <unistd.h>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/utf8.h"

namespace folio {
namespace {

using nlohmann::json;

std::string mapped(uint8_t b) {
  std::string s;
  append_utf8(s, byte_level_char(b));
  return s;
}

// A tokenizer.json whose byte tokens have id == byte value and whose merges (in rank order) add
// tokens 256, 257, ... in the order given.
json small_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges, json pre_tokenizer) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[mapped(static_cast<uint8_t>(b))] = b;
  json m = json::array();
  int next = 256;
  for (const auto& [a, b] : merges) {
    m.push_back(a + " " + b);
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
  }
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}},
          {"pre_tokenizer", pre_tokenizer},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", json::array()}};
}

json gpt2_pre() { return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}; }

void expect_invalid(const std::string& text, const std::string& needle) {
  try {
    load_tokenizer_json_string(text);
    ADD_FAILURE() << "expected InvalidInput containing " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(BpeTokenizer, AppliesMergesByRankHandDerived) {
  // "hello" -> h e l l o -(he)-> he l l o -(ll)-> he ll o -(hell)-> hell o -(hello)-> hello
  // " hello" continues with Ġ + hello -> Ġhello.
  auto tok = load_tokenizer_json_string(
      small_tokenizer({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "hello"}}, gpt2_pre()).dump());
  EXPECT_EQ(tok->encode("hello hello"), (std::vector<int32_t>{259, 260}));
  EXPECT_EQ(tok->encode("hell"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok->encode("help"), (std::vector<int32_t>{256, 'l', 'p'}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{259, 260}), "hello hello");
  EXPECT_EQ(tok->token_bytes(260), " hello");
  EXPECT_EQ(tok->vocab_size(), 261);
  EXPECT_EQ(tok->token_to_id(" hello"), 260);
  EXPECT_EQ(tok->token_to_id("\n"), 10);
  EXPECT_FALSE(tok->token_to_id("hello!").has_value());
}

TEST(BpeTokenizer, LowerRankWinsOverPositionAndTiesGoLeft) {
  // rank 0: b c, rank 1: a b. In "abc" the later pair merges first, leaving a + bc.
  auto tok = load_tokenizer_json_string(small_tokenizer({{"b", "c"}, {"a", "b"}}, gpt2_pre()).dump());
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(tok->encode("abab"), (std::vector<int32_t>{257, 257}));
  // "aaa" with a single merge a+a: the leftmost pair merges first -> aa a.
  auto tok2 = load_tokenizer_json_string(small_tokenizer({{"a", "a"}}, gpt2_pre()).dump());
  EXPECT_EQ(tok2->encode("aaa"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tok2->encode("aaaa"), (std::vector<int32_t>{256, 256}));
}

TEST(BpeTokenizer, MergesAsPairsEqualMergesAsStrings) {
  json j = small_tokenizer({{"h", "e"}, {"l", "l"}, {"he", "ll"}}, gpt2_pre());
  json pairs = json::array();
  for (const auto& m : j["model"]["merges"]) {
    const std::string s = m;
    pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  json j2 = j;
  j2["model"]["merges"] = pairs;
  auto a = load_tokenizer_json_string(j.dump()), b = load_tokenizer_json_string(j2.dump());
  for (const char* t : {"hello", "shell hell", "héllo"}) EXPECT_EQ(a->encode(t), b->encode(t)) << t;
  EXPECT_EQ(b->encode("hell"), (std::vector<int32_t>{258}));
}

TEST(BpeTokenizer, AddedTokensAreMatchedFirstLongestFirst) {
  json j = small_tokenizer({}, gpt2_pre());
  j["added_tokens"] = json::array({
      {{"id", 300}, {"content", "<td>"}, {"special", false}},
      {{"id", 301}, {"content", "<td>x"}, {"special", true}},
      {{"id", 302}, {"content", "<image>"}, {"special", true}},
      {{"id", 303}, {"content", "<｜begin▁of▁sentence｜>"}, {"special", true}},
      {{"id", 304}, {"content", "[R]"}, {"special", true}, {"rstrip", true}, {"lstrip", true}},
  });
  auto tok = load_tokenizer_json_string(j.dump());
  EXPECT_EQ(tok->vocab_size(), 305);
  EXPECT_EQ(tok->encode("<image>"), (std::vector<int32_t>{302}));
  EXPECT_EQ(tok->encode("a<td>b<td>x"), (std::vector<int32_t>{'a', 300, 'b', 301}));
  EXPECT_EQ(tok->encode("<｜begin▁of▁sentence｜>hi"), (std::vector<int32_t>{303, 'h', 'i'}));
  // lstrip / rstrip swallow the surrounding spaces.
  EXPECT_EQ(tok->encode("a  [R]  b"), (std::vector<int32_t>{'a', 304, 'b'}));
  EXPECT_EQ(tok->decode(tok->encode("x<image>y")), "x<image>y");
  EXPECT_EQ(tok->token_bytes(303), "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(tok->token_to_id("<image>"), 302);
  // Unassigned ids inside the range decode to nothing; outside the range is an error.
  EXPECT_EQ(tok->token_bytes(290), "");
  EXPECT_THROW(tok->token_bytes(305), Error);
  EXPECT_THROW(tok->decode(std::vector<int32_t>{-1}), Error);
  // Known names give BOS / EOS when nothing else says.
  EXPECT_EQ(tok->bos_id(), 303);
  EXPECT_FALSE(tok->eos_id().has_value());
  // Added tokens marked special are control tokens (left out of printed text); others are text.
  EXPECT_TRUE(tok->is_control(302));
  EXPECT_TRUE(tok->is_control(303));
  EXPECT_FALSE(tok->is_control(300));
  EXPECT_FALSE(tok->is_control('a'));
  EXPECT_THROW(tok->is_control(305), Error);
}

TEST(BpeTokenizer, SingleWordAddedTokenNeedsWordBoundaries) {
  json j = small_tokenizer({}, gpt2_pre());
  j["added_tokens"] = json::array({{{"id", 400}, {"content", "cat"}, {"single_word", true}}});
  auto tok = load_tokenizer_json_string(j.dump());
  EXPECT_EQ(tok->encode("a cat!"), (std::vector<int32_t>{'a', ' ', 400, '!'}));
  EXPECT_EQ(tok->encode("concat"), (std::vector<int32_t>{'c', 'o', 'n', 'c', 'a', 't'}));
}

TEST(BpeTokenizer, ByteLevelAddPrefixSpaceAndIgnoreMerges) {
  json j = small_tokenizer({{"Ġ", "h"}, {"Ġh", "i"}}, {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}});
  auto tok = load_tokenizer_json_string(j.dump());
  EXPECT_EQ(tok->encode("hi"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok->encode(" hi"), (std::vector<int32_t>{257}));  // no second space

  // ignore_merges: a piece that is itself a vocab entry is taken whole even without a merge path.
  json k = small_tokenizer({}, gpt2_pre());
  k["model"]["vocab"]["abc"] = 256;
  k["model"]["ignore_merges"] = true;
  EXPECT_EQ(load_tokenizer_json_string(k.dump())->encode("abc ab"), (std::vector<int32_t>{256, ' ', 'a', 'b'}));
  k["model"]["ignore_merges"] = false;
  EXPECT_EQ(load_tokenizer_json_string(k.dump())->encode("abc"), (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(BpeTokenizer, BosEosFromPostProcessorAndConfig) {
  json j = small_tokenizer({}, gpt2_pre());
  j["added_tokens"] = json::array({{{"id", 256}, {"content", "<bos>"}, {"special", true}},
                                   {{"id", 257}, {"content", "<eos>"}, {"special", true}},
                                   {{"id", 258}, {"content", "</s>"}, {"special", true}}});
  j["post_processor"] = json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel"},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<bos>": {"id": "<bos>", "ids": [256], "tokens": ["<bos>"]}}}]})");
  auto tok = load_tokenizer_json_string(j.dump());
  EXPECT_EQ(tok->bos_id(), 256);
  EXPECT_EQ(tok->eos_id(), 258);  // known name "</s>"
  EXPECT_EQ(tok->encode("x"), (std::vector<int32_t>{'x'}));  // encode never adds BOS

  auto cfg = load_tokenizer_json_string(j.dump(), R"({"bos_token": {"content": "<eos>"}, "eos_token": "<eos>"})");
  EXPECT_EQ(cfg->bos_id(), 257);
  EXPECT_EQ(cfg->eos_id(), 257);
  auto no_bos = load_tokenizer_json_string(j.dump(), R"({"add_bos_token": false, "bos_token": "<bos>"})");
  EXPECT_FALSE(no_bos->bos_id().has_value());

  // From a file: tokenizer_config.json next to tokenizer.json is read.
  const auto dir = std::filesystem::temp_directory_path() / ("folio_bpe_cfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<bos>"})";
  auto from_file = load_tokenizer_json((dir / "tokenizer.json").string());
  EXPECT_EQ(from_file->eos_id(), 256);
  std::filesystem::remove_all(dir);
}

TEST(BpeTokenizer, RejectsUnsupportedConstructsNamingThem) {
  const json base = small_tokenizer({{"a", "b"}}, gpt2_pre());
  json j = base;
  j["model"]["type"] = "Unigram";
  expect_invalid(j.dump(), "model.type");
  j = base;
  j["normalizer"] = {{"type", "NFC"}};
  expect_invalid(j.dump(), "normalizer \"NFC\"");
  j = base;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,5}"}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  expect_invalid(j.dump(), "Split regex \"\\\\p{N}{1,5}\"");
  j = base;
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_invalid(j.dump(), "pre_tokenizer \"Metaspace\"");
  j = base;
  j["decoder"] = {{"type", "WordPiece"}};
  expect_invalid(j.dump(), "decoder \"WordPiece\"");
  j = base;
  j["model"]["merges"].push_back("x zz");
  expect_invalid(j.dump(), "x zz");
  j = base;
  j["model"]["vocab"].erase(mapped('\n'));
  expect_invalid(j.dump(), "byte 0x0A");
  j = base;
  j["model"]["continuing_subword_prefix"] = "##";
  expect_invalid(j.dump(), "continuing_subword_prefix");
  expect_invalid("{not json", "not valid JSON");
  expect_invalid("{}", "model");
  try {
    load_tokenizer_json("/nonexistent/dir/tokenizer.json");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json"), std::string::npos);
  }
}

// ---- the synthetic DeepSeek-style tokenizer, checked against a naive reference BPE ------------

struct TempDir {
  std::filesystem::path path;
  TempDir() : path(std::filesystem::temp_directory_path() / ("folio_text_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Textbook BPE: rescan for the lowest-ranked adjacent pair (leftmost on ties) and merge it.
std::vector<int32_t> naive_encode(const json& j, const std::string& text) {
  std::map<std::pair<std::string, std::string>, int> rank;
  const auto& merges = j["model"]["merges"];
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string s = merges[r];
    rank.emplace(std::make_pair(s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)), static_cast<int>(r));
  }
  std::map<std::string, int32_t> specials;
  for (const auto& a : j["added_tokens"]) specials[a["content"]] = a["id"];
  std::vector<int32_t> out;
  auto encode_plain = [&](const std::string& seg) {
    for (auto [b, e] : pre_tokenize(seg, {SplitPattern::DeepSeekV3Digits, SplitPattern::DeepSeekV3Cjk,
                                          SplitPattern::DeepSeekV3Main})) {
      std::vector<std::string> sym;
      for (size_t k = b; k < e; ++k) sym.push_back(mapped(static_cast<uint8_t>(seg[k])));
      for (;;) {
        int best = -1, best_rank = INT32_MAX;
        for (size_t k = 0; k + 1 < sym.size(); ++k) {
          auto it = rank.find({sym[k], sym[k + 1]});
          if (it != rank.end() && it->second < best_rank) best = static_cast<int>(k), best_rank = it->second;
        }
        if (best < 0) break;
        sym[best] += sym[best + 1];
        sym.erase(sym.begin() + best + 1);
      }
      for (const auto& s : sym) out.push_back(j["model"]["vocab"][s].get<int32_t>());
    }
  };
  // Specials only appear where the test puts them, so a plain find is enough here.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best_at = std::string::npos;
    std::string best_tok;
    for (const auto& [s, id] : specials) {
      const size_t at = text.find(s, pos);
      if (at < best_at) best_at = at, best_tok = s;
    }
    if (best_at == std::string::npos) break;
    encode_plain(text.substr(pos, best_at - pos));
    out.push_back(specials[best_tok]);
    pos = best_at + best_tok.size();
  }
  encode_plain(text.substr(pos));
  return out;
}

const std::vector<std::pair<std::string, int32_t>> kSpecials = {
    {"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<image>", 1800}};

TEST(SyntheticBpeTokenizer, LoadsWithExactVocabAndSpecials) {
  TempDir dir;
  const std::string path = (dir.path / "tokenizer.json").string();
  write_synthetic_bpe_tokenizer_json(path, 2000, kSpecials, 7);
  auto tok = load_tokenizer_json(path);
  EXPECT_EQ(tok->vocab_size(), 2000);
  for (int32_t id = 0; id < 2000; ++id) EXPECT_FALSE(tok->token_bytes(id).empty()) << id;
  EXPECT_EQ(tok->bos_id(), 0);  // from the TemplateProcessing post_processor
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_EQ(tok->token_to_id("<image>"), 1800);
  std::vector<int32_t> expected{1800, tok->token_to_id("\n").value()};
  for (int32_t id : tok->encode("Convert")) expected.push_back(id);
  EXPECT_EQ(tok->encode("<image>\nConvert"), expected);
  // Merges were learnt: common English words are single tokens.
  EXPECT_EQ(tok->encode(" the").size(), 1u);
  EXPECT_LT(tok->encode("The results of the study").size(), 10u);
  const json j = json::parse(std::ifstream(path));
  EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"].size(), 4u);
  EXPECT_EQ(j["model"]["merges"].size(), 400u);
}

TEST(SyntheticBpeTokenizer, DeterministicPerSeed) {
  EXPECT_EQ(make_synthetic_bpe_tokenizer_json(2000, kSpecials, 3), make_synthetic_bpe_tokenizer_json(2000, kSpecials, 3));
  EXPECT_NE(make_synthetic_bpe_tokenizer_json(2000, kSpecials, 3), make_synthetic_bpe_tokenizer_json(2000, kSpecials, 4));
}

TEST(SyntheticBpeTokenizer, RejectsBadSpecialsAndSizes) {
  EXPECT_THROW(make_synthetic_bpe_tokenizer_json(100, {}, 0), Error);
  EXPECT_THROW(make_synthetic_bpe_tokenizer_json(1000, {{"<a>", 5}, {"<b>", 5}}, 0), Error);
  EXPECT_THROW(make_synthetic_bpe_tokenizer_json(1000, {{"<a>", 1000}}, 0), Error);
  EXPECT_THROW(make_synthetic_bpe_tokenizer_json(1000, {{"<a>", 1}, {"<a>", 2}}, 0), Error);
  try {
    make_synthetic_bpe_tokenizer_json(1000, {{"<image>", 4000}}, 0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<image>"), std::string::npos);
  }
}

TEST(SyntheticBpeTokenizer, MatchesNaiveBpeAndRoundTripsArbitraryText) {
  const std::string text_json = make_synthetic_bpe_tokenizer_json(3000, kSpecials, 11);
  const json j = json::parse(text_json);
  auto tok = load_tokenizer_json_string(text_json);
  const std::vector<std::string> pool = {"the", " study", "tion", "中文", "ひら", "😀", "é", " ", "  ", "\n", "\t",
                                         "123", "4567", ".", ",", "(", ")", "|", "<td>", "Ω", "\xE2\x96\x81",
                                         "<image>", "<｜end▁of▁sentence｜>", "THE", "x"};
  std::mt19937 rng(5);
  for (int t = 0; t < 300; ++t) {
    std::string s;
    const int n = 1 + rng() % 25;
    for (int k = 0; k < n; ++k) s += pool[rng() % pool.size()];
    const auto ids = tok->encode(s);
    EXPECT_EQ(ids, naive_encode(j, s)) << s;
    EXPECT_EQ(tok->decode(ids), s);
  }
  // Arbitrary bytes, including invalid UTF-8, survive too.
  for (int t = 0; t < 200; ++t) {
    std::string s;
    const int n = rng() % 40;
    for (int k = 0; k < n; ++k) s.push_back(static_cast<char>(rng() % 256));
    EXPECT_EQ(tok->decode(tok->encode(s)), s);
  }
}

TEST(SyntheticBpeTokenizer, FullDeepSeekOcrSize) {
  const std::string text = make_synthetic_bpe_tokenizer_json(
      129280, {{"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<image>", 128815}}, 1);
  auto tok = load_tokenizer_json_string(text);
  EXPECT_EQ(tok->vocab_size(), 129280);
  EXPECT_EQ(tok->encode("<image>"), (std::vector<int32_t>{128815}));
  EXPECT_EQ(tok->decode(tok->encode("Hello, 世界! 12345")), "Hello, 世界! 12345");
}

}  // namespace
}  // namespace folio
