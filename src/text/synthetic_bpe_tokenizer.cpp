// make_synthetic_bpe_tokenizer_json: a small but real tokenizer.json for synthetic models.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/utf8.h"

namespace folio {
namespace {

using nlohmann::json;

// Sample the merges are learnt from: plain English prose of the kind OCR output contains.
constexpr std::string_view kSample =
    "The quick brown fox jumps over the lazy dog. A document is a page of text that people read, "
    "and the text on the page is made of words, numbers and tables. When the reader reaches the "
    "end of a line, the next line begins at the left margin of the page.\n"
    "Section 1. Introduction\n"
    "This report describes the results of the study and the methods that were used in it. The "
    "study was carried out over three years in several different regions of the country, and the "
    "data were collected by teams of students working with their teachers.\n"
    "Section 2. Methods\n"
    "Each team recorded the temperature, the rainfall and the number of visitors to the station "
    "every morning and every evening. The records were then checked, corrected where necessary and "
    "entered into a table. In total there were more than one thousand records for each station.\n"
    "Section 3. Results\n"
    "The results show that the temperature increased in the summer months and decreased in the "
    "winter months, as expected. The rainfall was highest in the spring and lowest in the autumn. "
    "The number of visitors was highest when the weather was warm and dry, and lowest when it was "
    "cold or wet. These findings are consistent with earlier studies of the same region.\n"
    "Section 4. Discussion\n"
    "There are several reasons why these results are important. First, they confirm that the "
    "methods used in the study are reliable. Second, they provide information that can be used to "
    "plan future work at the stations. Finally, they show that students can make a real "
    "contribution to scientific research when they are given the right training and support.\n"
    "Table 1 lists the stations, their height above sea level and the average temperature in each "
    "season. Figure 2 shows the total rainfall for each month of the year.\n";

constexpr int kMaxMerges = 400;

std::vector<SplitPattern> deepseek_patterns() {
  return {SplitPattern::DeepSeekV3Digits, SplitPattern::DeepSeekV3Cjk, SplitPattern::DeepSeekV3Main};
}

// Splits a byte-level mapped string into its characters (each one original byte).
std::vector<std::string> mapped_chars(std::string_view bytes) {
  std::vector<std::string> out;
  for (char c : bytes) {
    std::string s;
    append_utf8(s, byte_level_char(static_cast<uint8_t>(c)));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

namespace {

// Ids handed out in order, skipping those the special tokens hold.
class VocabBuilder {
 public:
  VocabBuilder(int32_t vocab_size, const std::vector<std::pair<std::string, int32_t>>& special_tokens)
      : size_(vocab_size), taken_(vocab_size > 0 ? static_cast<size_t>(vocab_size) : 0, false) {
    std::set<std::string> names;
    for (const auto& [content, id] : special_tokens) {
      FOLIO_CHECK_INPUT(!content.empty(), "synthetic tokenizer: special token with id " + std::to_string(id) + " is empty");
      FOLIO_CHECK_INPUT(id >= 0 && id < vocab_size, "synthetic tokenizer: special token " + content + " has id " + std::to_string(id) +
                                                        " outside [0, " + std::to_string(vocab_size) + ")");
      FOLIO_CHECK_INPUT(!taken_[id], "synthetic tokenizer: id " + std::to_string(id) + " given to two special tokens");
      FOLIO_CHECK_INPUT(names.insert(content).second, "synthetic tokenizer: special token " + content + " given twice");
      taken_[id] = true;
    }
    FOLIO_CHECK_INPUT(static_cast<int64_t>(vocab_size) >= 256 + static_cast<int64_t>(special_tokens.size()),
                      "synthetic tokenizer: vocab_size " + std::to_string(vocab_size) + " leaves no room for the 256 byte tokens and " +
                          std::to_string(special_tokens.size()) + " special tokens");
  }
  // Gives s the next free id; false when s is already in the vocabulary.
  bool add(const std::string& s) {
    if (vocab_.contains(s)) return false;
    while (taken_[next_free_]) ++next_free_;
    taken_[next_free_] = true;
    vocab_[s] = next_free_;
    return true;
  }
  int32_t free_left() const {
    int32_t n = 0;
    for (int32_t i = next_free_; i < size_; ++i) n += !taken_[i];
    return n;
  }
  const json& vocab() const { return vocab_; }

 private:
  int32_t size_;
  std::vector<bool> taken_;
  int32_t next_free_ = 0;
  json vocab_ = json::object();
};

// Greedy BPE training: words are the sample's pre-tokenized pieces; repeatedly merge the most
// frequent adjacent pair (ties: smallest pair, so the result is the same everywhere), adding each
// merged symbol while there is room. Returns the merges.
json train_merges(VocabBuilder& v, int32_t& room) {
  std::map<std::string, int> word_count;
  for (auto [b, e] : pre_tokenize(kSample, deepseek_patterns())) ++word_count[std::string(kSample.substr(b, e - b))];
  std::vector<std::pair<std::vector<std::string>, int>> words;
  for (const auto& [w, c] : word_count) words.emplace_back(mapped_chars(w), c);
  json merges = json::array();
  for (int m = 0; m < kMaxMerges && room > 0; ++m) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [syms, c] : words)
      for (size_t k = 0; k + 1 < syms.size(); ++k) pairs[{syms[k], syms[k + 1]}] += c;
    const std::pair<std::string, std::string>* best = nullptr;
    int best_count = 0;
    for (const auto& [p, c] : pairs)
      if (c > best_count) best = &p, best_count = c;
    if (!best) break;
    const auto [a, b] = *best;
    merges.push_back(a + " " + b);
    if (v.add(a + b)) --room;
    for (auto& [syms, c] : words) {
      std::vector<std::string> merged;
      for (size_t k = 0; k < syms.size(); ++k) {
        const bool pair = k + 1 < syms.size() && syms[k] == a && syms[k + 1] == b;
        merged.push_back(pair ? a + b : syms[k]);
        k += pair;
      }
      syms.swap(merged);
    }
  }
  return merges;
}

json added_tokens_json(std::vector<std::pair<std::string, int32_t>> specials) {
  json added = json::array();
  std::sort(specials.begin(), specials.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  for (const auto& [content, id] : specials)
    added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  return added;
}

json pre_tokenizer_json() {
  json pretok = json::array();
  for (SplitPattern p : deepseek_patterns())
    pretok.push_back({{"type", "Split"}, {"pattern", {{"Regex", split_pattern_regex(p)}}}, {"behavior", "Isolated"}, {"invert", false}});
  pretok.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
  return {{"type", "Sequence"}, {"pretokenizers", pretok}};
}

// DeepSeek's post-processor adds BOS when the special tokens have one (null otherwise).
json post_processor_json(const std::vector<std::pair<std::string, int32_t>>& special_tokens) {
  const std::string bos = "<｜begin▁of▁sentence｜>";
  for (const auto& [content, id] : special_tokens) {
    if (content != bos) continue;
    return {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                      {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {id}}, {"tokens", {bos}}}}}}};
  }
  return nullptr;
}

}  // namespace

std::string make_synthetic_bpe_tokenizer_json(int32_t vocab_size,
                                              const std::vector<std::pair<std::string, int32_t>>& special_tokens,
                                              uint64_t seed) {
  VocabBuilder v(vocab_size, special_tokens);
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_level_char(static_cast<uint8_t>(b)));
    v.add(s);
  }
  int32_t room = v.free_left();
  const json merges = train_merges(v, room);
  // Filler: random lowercase strings, half with a leading space, so every id exists and a random
  // model's output still decodes to readable bytes. No merge produces them, which is harmless.
  std::mt19937_64 rng(seed);
  while (room > 0) {
    std::string s = (rng() & 1) ? "Ġ" : "";
    const int len = 3 + static_cast<int>(rng() % 5);
    for (int k = 0; k < len; ++k) s += static_cast<char>('a' + rng() % 26);
    if (v.add(s)) --room;
  }
  json j = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added_tokens_json(special_tokens)},
            {"normalizer", {{"type", "Sequence"}, {"normalizers", json::array()}}},
            {"pre_tokenizer", pre_tokenizer_json()},
            {"post_processor", post_processor_json(special_tokens)},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                       {"vocab", v.vocab()}, {"merges", merges}}}};
  return j.dump();
}

void write_synthetic_bpe_tokenizer_json(const std::string& path, int32_t vocab_size,
                                        const std::vector<std::pair<std::string, int32_t>>& special_tokens,
                                        uint64_t seed) {
  const std::string text = make_synthetic_bpe_tokenizer_json(vocab_size, special_tokens, seed);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(Error::Kind::Io, "cannot create " + path);
  f << text;
  f.close();
  if (!f) throw Error(Error::Kind::Io, "cannot write " + path);
}

}  // namespace folio
