#include "text/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/unicode_class.h"
#include "text/utf8.h"

namespace folio {
namespace {

using nlohmann::json;

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, single_word = false, lstrip = false, rstrip = false;
};

struct Merge {
  int32_t rank;
  int32_t result;
};

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

// A token string or {"content": ...} object as tokenizer_config.json writes special tokens.
std::optional<std::string> token_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool word_char(char32_t c) {
  if (c == '_') return true;
  const UnicodeClass k = unicode_class(c);
  return k == UnicodeClass::Letter || k == UnicodeClass::Number;
}

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(const json& j, const json* config, const std::string& source) : source_(source) {
    parse_model(j.at("model"));
    parse_added_tokens(j);
    build_id_table();
    parse_normalizer(j);
    parse_pre_tokenizer(j);
    parse_decoder(j);
    resolve_bos_eos(j, config);
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> out;
    size_t seg_start = 0, i = 0;
    while (i < text.size()) {
      const AddedToken* tok = match_added(text, i);
      if (!tok) {
        ++i;
        continue;
      }
      size_t begin = i, end = i + tok->content.size();
      if (tok->lstrip)
        while (begin > seg_start && ascii_space(text[begin - 1])) --begin;
      if (tok->rstrip)
        while (end < text.size() && ascii_space(text[end])) ++end;
      encode_segment(text.substr(seg_start, begin - seg_start), out);
      out.push_back(tok->id);
      i = seg_start = end;
    }
    encode_segment(text.substr(seg_start), out);
    return out;
  }

  std::string decode(std::span<const int32_t> ids) const override {
    std::string out;
    for (int32_t id : ids) {
      check_id(id);
      out += raw_[id];
    }
    return out;
  }

  std::string token_bytes(int32_t id) const override {
    check_id(id);
    return raw_[id];
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(raw_.size()); }

  std::optional<int32_t> token_to_id(std::string_view piece) const override {
    if (auto it = added_by_content_.find(std::string(piece)); it != added_by_content_.end()) return it->second;
    if (auto it = vocab_.find(byte_level_encode(piece)); it != vocab_.end()) return it->second;
    return std::nullopt;
  }

  std::optional<int32_t> bos_id() const override { return bos_; }
  std::optional<int32_t> eos_id() const override { return eos_; }

  bool is_control(int32_t id) const override {
    check_id(id);
    return special_ids_.count(id) > 0;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { throw_invalid(source_ + ": " + what); }

  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
      throw_invalid("token id " + std::to_string(id) + " is outside the vocabulary of " + source_ + " (size " +
                    std::to_string(vocab_size()) + ")");
  }

  // ---- loading ------------------------------------------------------------------------------

  void parse_model(const json& m) {
    if (!m.is_object()) bad("\"model\" is not an object");
    if (m.contains("type") && m["type"] != "BPE")
      bad("unsupported model.type " + m["type"].dump() + " (only \"BPE\" is supported)");
    if (m.contains("dropout") && !m["dropout"].is_null() && !(m["dropout"].is_number() && m["dropout"].get<double>() == 0))
      bad("unsupported model.dropout " + m["dropout"].dump());
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (m.contains(key) && !m[key].is_null() && m[key] != "") bad(std::string("unsupported model.") + key + " " + m[key].dump());
    }
    ignore_merges_ = m.value("ignore_merges", false);
    const json& vocab = m.at("vocab");
    if (!vocab.is_object()) bad("model.vocab is not an object");
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
        bad("model.vocab entry " + json(it.key()).dump() + " has invalid id " + it.value().dump());
      vocab_.emplace(it.key(), it.value().get<int32_t>());
    }
    for (int b = 0; b < 256; ++b) {
      std::string s;
      append_utf8(s, byte_level_char(static_cast<uint8_t>(b)));
      auto it = vocab_.find(s);
      if (it == vocab_.end()) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b);
        bad(std::string("model.vocab lacks the byte-level token ") + json(s).dump() + " for byte " + hex);
      }
      byte_id_[b] = it->second;
    }
    const json& merges = m.at("merges");
    if (!merges.is_array()) bad("model.merges is not an array");
    for (size_t r = 0; r < merges.size(); ++r) {
      const json& e = merges[r];
      std::string a, b;
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) bad("model.merges entry " + e.dump() + " is not \"a b\"");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        a = e[0].get<std::string>();
        b = e[1].get<std::string>();
      } else {
        bad("model.merges entry " + e.dump() + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      auto ia = vocab_.find(a), ib = vocab_.find(b), ir = vocab_.find(a + b);
      if (ia == vocab_.end() || ib == vocab_.end() || ir == vocab_.end())
        bad("model.merges entry " + e.dump() + " names a token missing from model.vocab");
      merges_.emplace(pair_key(ia->second, ib->second), Merge{static_cast<int32_t>(r), ir->second});
    }
  }

  void parse_added_tokens(const json& j) {
    if (!j.contains("added_tokens") || j["added_tokens"].is_null()) return;
    const json& arr = j["added_tokens"];
    if (!arr.is_array()) bad("\"added_tokens\" is not an array");
    for (const json& t : arr) {
      AddedToken a;
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
          !t["content"].is_string())
        bad("added_tokens entry " + t.dump() + " lacks an integer id or a string content");
      a.id = t["id"].get<int32_t>();
      a.content = t["content"].get<std::string>();
      if (a.id < 0) bad("added_tokens entry " + t.dump() + " has a negative id");
      if (a.content.empty()) bad("added_tokens entry " + t.dump() + " has empty content");
      a.special = t.value("special", false);
      a.single_word = t.value("single_word", false);
      a.lstrip = t.value("lstrip", false);
      a.rstrip = t.value("rstrip", false);
      added_by_content_[a.content] = a.id;
      added_.push_back(std::move(a));
    }
    for (size_t k = 0; k < added_.size(); ++k) added_by_first_byte_[static_cast<uint8_t>(added_[k].content[0])].push_back(k);
    for (auto& list : added_by_first_byte_) {
      std::stable_sort(list.begin(), list.end(),
                       [&](size_t x, size_t y) { return added_[x].content.size() > added_[y].content.size(); });
    }
  }

  void build_id_table() {
    int32_t max_id = -1;
    for (const auto& [s, id] : vocab_) max_id = std::max(max_id, id);
    for (const AddedToken& a : added_) max_id = std::max(max_id, a.id);
    raw_.assign(static_cast<size_t>(max_id) + 1, std::string());
    std::vector<bool> seen(raw_.size(), false);
    for (const auto& [s, id] : vocab_) {
      if (seen[id]) bad("model.vocab assigns id " + std::to_string(id) + " twice");
      seen[id] = true;
      raw_[id] = byte_level_decode(s);
    }
    // Added tokens are never byte-level mapped: their content is their text.
    for (const AddedToken& a : added_) {
      raw_[a.id] = a.content;
      if (a.special) special_ids_.insert(a.id);
    }
  }

  void parse_normalizer(const json& j) {
    if (!j.contains("normalizer") || j["normalizer"].is_null()) return;
    const json& n = j["normalizer"];
    if (n.value("type", "") == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array() &&
        n["normalizers"].empty())
      return;
    bad("unsupported normalizer " + json(n.value("type", std::string("?"))).dump());
  }

  void parse_byte_level(const json& p, bool in_sequence) {
    if (p.value("use_regex", true)) patterns_.push_back(SplitPattern::Gpt2);
    if (p.value("add_prefix_space", false)) {
      // Inside a Sequence tokenizers adds the space to every piece, not just the text start.
      if (in_sequence) bad("unsupported pre_tokenizer: ByteLevel with add_prefix_space inside a Sequence");
      add_prefix_space_ = true;
    }
  }

  void parse_pre_tokenizer(const json& j) {
    if (!j.contains("pre_tokenizer") || j["pre_tokenizer"].is_null())
      bad("a byte-level BPE needs a ByteLevel pre_tokenizer, but pre_tokenizer is null");
    const json& p = j["pre_tokenizer"];
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") {
      parse_byte_level(p, false);
      return;
    }
    if (type != "Sequence") bad("unsupported pre_tokenizer " + json(type).dump());
    const json& list = p.at("pretokenizers");
    if (!list.is_array() || list.empty()) bad("pre_tokenizer Sequence has no pretokenizers");
    for (size_t k = 0; k < list.size(); ++k) {
      const json& e = list[k];
      const std::string t = e.value("type", "");
      const bool last = k + 1 == list.size();
      if (t == "ByteLevel") {
        if (!last) bad("unsupported pre_tokenizer Sequence: ByteLevel must come last");
        parse_byte_level(e, true);
      } else if (t == "Split") {
        if (e.value("behavior", "") != "Isolated")
          bad("unsupported pre_tokenizer Split behavior " + json(e.value("behavior", "")).dump());
        if (e.value("invert", false)) bad("unsupported pre_tokenizer Split with invert true");
        const json& pat = e.at("pattern");
        if (!pat.contains("Regex") || !pat["Regex"].is_string())
          bad("unsupported pre_tokenizer Split pattern " + pat.dump() + " (only known Regex patterns)");
        const std::string regex = pat["Regex"].get<std::string>();
        auto known = split_pattern_from_regex(regex);
        if (!known) bad("unsupported pre_tokenizer Split regex " + json(regex).dump());
        patterns_.push_back(*known);
      } else {
        bad("unsupported pre_tokenizer " + json(t).dump() + " in Sequence");
      }
      if (last && t != "ByteLevel") bad("unsupported pre_tokenizer Sequence: it does not end in ByteLevel");
    }
  }

  void parse_decoder(const json& j) {
    if (!j.contains("decoder") || j["decoder"].is_null()) return;
    const std::string type = j["decoder"].value("type", "");
    if (type != "ByteLevel") bad("unsupported decoder " + json(type).dump());
  }

  // Id of a token named in a config: an added token's content, else a vocab entry's raw text.
  std::optional<int32_t> named(const std::string& s) const { return token_to_id(s); }

  static const json* template_processing(const json& pp) {
    if (!pp.is_object()) return nullptr;
    const std::string type = pp.value("type", "");
    if (type == "TemplateProcessing") return &pp;
    if (type == "Sequence" && pp.contains("processors") && pp["processors"].is_array()) {
      for (const json& sub : pp["processors"])
        if (const json* t = template_processing(sub)) return t;
    }
    return nullptr;
  }

  void resolve_bos_eos(const json& j, const json* config) {
    bool bos_done = false;
    if (config) {
      if (config->contains("add_bos_token") && (*config)["add_bos_token"] == false) bos_done = true;
      if (!bos_done && config->contains("bos_token"))
        if (auto s = token_string((*config)["bos_token"])) {
          bos_ = named(*s);
          bos_done = bos_.has_value();
        }
      if (config->contains("eos_token"))
        if (auto s = token_string((*config)["eos_token"])) eos_ = named(*s);
    }
    if (!bos_done && j.contains("post_processor")) {
      if (const json* t = template_processing(j["post_processor"])) {
        const json& single = t->value("single", json::array());
        if (single.is_array() && !single.empty() && single[0].contains("SpecialToken")) {
          const std::string name = single[0]["SpecialToken"].value("id", "");
          const json& st = t->value("special_tokens", json::object());
          if (st.contains(name) && st[name].contains("ids") && st[name]["ids"].is_array() && !st[name]["ids"].empty())
            bos_ = st[name]["ids"][0].get<int32_t>();
          else
            bos_ = named(name);
          bos_done = bos_.has_value();
        }
      }
    }
    if (!bos_done)
      for (const char* s : {"<｜begin▁of▁sentence｜>", "<s>", "<|begin_of_text|>"})
        if ((bos_ = named(s))) break;
    if (!eos_)
      for (const char* s : {"<｜end▁of▁sentence｜>", "</s>", "<|end_of_text|>", "<|endoftext|>"})
        if ((eos_ = named(s))) break;
  }

  // ---- encoding -----------------------------------------------------------------------------

  // Longest added token starting at byte i of text, honouring single_word.
  const AddedToken* match_added(std::string_view text, size_t i) const {
    for (size_t k : added_by_first_byte_[static_cast<uint8_t>(text[i])]) {
      const AddedToken& a = added_[k];
      if (text.compare(i, a.content.size(), a.content) != 0) continue;
      if (a.single_word) {
        const size_t end = i + a.content.size();
        if (i > 0) {
          size_t p = i - 1;
          while (p > 0 && (static_cast<uint8_t>(text[p]) & 0xC0) == 0x80) --p;
          const DecodedText prev = decode_utf8(text.substr(p, i - p));
          if (!prev.cps.empty() && word_char(prev.cps.back())) continue;
        }
        if (end < text.size()) {
          const DecodedText next = decode_utf8(text.substr(end, std::min<size_t>(4, text.size() - end)));
          if (!next.cps.empty() && word_char(next.cps.front())) continue;
        }
      }
      return &a;
    }
    return nullptr;
  }

  void encode_segment(std::string_view seg, std::vector<int32_t>& out) const {
    if (seg.empty()) return;
    std::string prefixed;
    if (add_prefix_space_ && seg[0] != ' ') {
      prefixed = " ";
      prefixed += seg;
      seg = prefixed;
    }
    for (auto [b, e] : pre_tokenize(seg, patterns_)) encode_piece(seg.substr(b, e - b), out);
  }

  // Byte-level BPE of one piece: start from byte tokens and repeatedly apply the lowest-ranked
  // merge, leftmost first on ties (the order tokenizers' Word::merge_all uses).
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
    if (ignore_merges_) {
      if (auto it = vocab_.find(byte_level_encode(bytes)); it != vocab_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    const size_t n = bytes.size();
    if (n == 1) {
      out.push_back(byte_id_[static_cast<uint8_t>(bytes[0])]);
      return;
    }
    std::vector<int32_t> id(n);
    std::vector<int> prev(n), next(n);
    for (size_t k = 0; k < n; ++k) {
      id[k] = byte_id_[static_cast<uint8_t>(bytes[k])];
      prev[k] = static_cast<int>(k) - 1;
      next[k] = k + 1 < n ? static_cast<int>(k) + 1 : -1;
    }
    struct Cand {
      int32_t rank;
      int pos;
      int32_t left, right;
      bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
    auto consider = [&](int pos) {
      if (pos < 0 || next[pos] < 0) return;
      auto it = merges_.find(pair_key(id[pos], id[next[pos]]));
      if (it != merges_.end()) heap.push({it->second.rank, pos, id[pos], id[next[pos]]});
    };
    for (size_t k = 0; k + 1 < n; ++k) consider(static_cast<int>(k));
    while (!heap.empty()) {
      const Cand c = heap.top();
      heap.pop();
      // Stale if either side has changed since the candidate was queued (dead symbols have
      // id -1, and a merged symbol gets a new id).
      if (id[c.pos] != c.left || next[c.pos] < 0 || id[next[c.pos]] != c.right) continue;
      const int r = next[c.pos];
      id[c.pos] = merges_.at(pair_key(c.left, c.right)).result;
      id[r] = -1;
      next[c.pos] = next[r];
      if (next[r] >= 0) prev[next[r]] = c.pos;
      consider(prev[c.pos]);
      consider(c.pos);
    }
    for (int k = 0; k >= 0; k = next[k]) out.push_back(id[k]);
  }

  std::string source_;
  std::unordered_map<std::string, int32_t> vocab_;  // byte-level mapped string -> id
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<uint64_t, Merge> merges_;      // (left id, right id) -> rank, merged id
  bool ignore_merges_ = false;
  std::vector<SplitPattern> patterns_;
  bool add_prefix_space_ = false;
  std::vector<AddedToken> added_;
  std::unordered_set<int32_t> special_ids_;  // added tokens marked "special"
  std::unordered_map<std::string, int32_t> added_by_content_;
  std::array<std::vector<size_t>, 256> added_by_first_byte_;  // indices into added_, longest first
  std::vector<std::string> raw_;                               // id -> raw bytes
  std::optional<int32_t> bos_, eos_;
};

std::unique_ptr<Tokenizer> build(std::string_view text, std::string_view config_text, const std::string& source,
                                 const std::string& config_source) {
  json j, config;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_invalid(source + ": not valid JSON: " + e.what());
  }
  if (!config_text.empty()) {
    try {
      config = json::parse(config_text);
    } catch (const json::exception& e) {
      throw_invalid(config_source + ": not valid JSON: " + e.what());
    }
  }
  if (!j.is_object()) throw_invalid(source + ": not a JSON object");
  try {
    return std::make_unique<BpeTokenizer>(j, config.is_object() ? &config : nullptr, source);
  } catch (const json::exception& e) {
    throw_invalid(source + ": malformed tokenizer.json: " + e.what());
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(Error::Kind::Io, "cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(Error::Kind::Io, "cannot read " + path);
  return ss.str();
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
  const std::string text = read_file(path);
  const std::filesystem::path config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::string config_text;
  std::error_code ec;
  if (std::filesystem::is_regular_file(config_path, ec)) config_text = read_file(config_path.string());
  return build(text, config_text, path, config_path.string());
}

std::unique_ptr<Tokenizer> load_tokenizer_json_string(std::string_view tokenizer_json,
                                                      std::string_view tokenizer_config_json,
                                                      const std::string& source) {
  return build(tokenizer_json, tokenizer_config_json, source, source + " (tokenizer_config)");
}

}  // namespace folio
