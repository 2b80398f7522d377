#include "text/sentencepiece_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "text/utf8.h"

namespace folio {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

enum TokenType : int32_t { kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

std::string escape_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == ' ') out += kSpace;
    else out += c;
  }
  return out;
}

std::string unescape_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kSpace.size(), kSpace) == 0) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// "<0xAB>" -> 0xAB.
std::optional<uint8_t> parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(SpmVocab v) : v_(std::move(v)) {
    const size_t n = v_.tokens.size();
    FOLIO_CHECK_INPUT(n > 0, "SentencePiece vocabulary is empty");
    FOLIO_CHECK_INPUT(n <= static_cast<size_t>(INT32_MAX), "SentencePiece vocabulary is too large");
    FOLIO_CHECK_INPUT(v_.scores.empty() || v_.scores.size() == n,
                      "SentencePiece vocabulary has " + std::to_string(n) + " tokens but " +
                          std::to_string(v_.scores.size()) + " scores");
    FOLIO_CHECK_INPUT(v_.types.empty() || v_.types.size() == n,
                      "SentencePiece vocabulary has " + std::to_string(n) + " tokens but " +
                          std::to_string(v_.types.size()) + " token types");
    if (v_.scores.empty()) v_.scores.assign(n, 0.f);
    if (v_.types.empty()) v_.types.assign(n, kNormal);
    for (const auto& [name, id] : {std::pair<const char*, int32_t>{"bos", v_.bos}, {"eos", v_.eos}, {"unk", v_.unk}}) {
      FOLIO_CHECK_INPUT(id >= -1 && id < static_cast<int32_t>(n), std::string("SentencePiece ") + name + " id " +
                                                                      std::to_string(id) + " is outside the vocabulary");
    }
    byte_token_.fill(-1);
    raw_.resize(n);
    special_.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = static_cast<int32_t>(i);
      const int32_t t = v_.types[i];
      FOLIO_CHECK_INPUT(t >= kUndefined && t <= kByte, "SentencePiece token " + std::to_string(i) + " (" +
                                                           v_.tokens[i] + ") has unknown type " + std::to_string(t));
      const std::string& s = v_.tokens[i];
      token_id_.emplace(s, id);
      if (t == kNormal || t == kUndefined || t == kUserDefined) mergeable_.emplace(s, id);
      if (t == kByte) {
        if (auto b = parse_byte_token(s)) {
          if (byte_token_[*b] < 0) byte_token_[*b] = id;
          raw_[i] = std::string(1, static_cast<char>(*b));
          continue;
        }
      }
      if ((t == kControl || t == kUserDefined) && !s.empty()) {
        special_[i] = true;
        literal_[static_cast<uint8_t>(s[0])].push_back(id);
      }
      raw_[i] = unescape_spaces(s);
    }
    // Literal matching prefers the longest token, so sort once.
    for (auto& bucket : literal_)
      std::stable_sort(bucket.begin(), bucket.end(),
                       [&](int32_t a, int32_t b) { return v_.tokens[a].size() > v_.tokens[b].size(); });
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> out;
    size_t start = 0, i = 0;
    bool after_special = true;  // the text start counts as following a special token
    while (i < text.size()) {
      int32_t hit = -1;
      for (int32_t id : literal_[static_cast<uint8_t>(text[i])]) {
        if (text.compare(i, v_.tokens[id].size(), v_.tokens[id]) == 0) {
          hit = id;
          break;
        }
      }
      if (hit < 0) {
        ++i;
        continue;
      }
      if (i > start) encode_fragment(text.substr(start, i - start), after_special, out);
      out.push_back(hit);
      after_special = true;
      i = start = i + v_.tokens[hit].size();
    }
    if (start < text.size()) encode_fragment(text.substr(start), after_special, out);
    return out;
  }

  std::string decode(std::span<const int32_t> ids) const override {
    std::string out;
    bool strip = v_.add_space_prefix;
    for (int32_t id : ids) {
      check_id(id);
      if (special_[id]) {
        out += raw_[id];
        strip = v_.add_space_prefix;
        continue;
      }
      std::string_view piece = raw_[id];
      if (strip && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
      strip = false;
      out += piece;
    }
    return out;
  }

  std::string token_bytes(int32_t id) const override {
    check_id(id);
    return raw_[id];
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(v_.tokens.size()); }

  std::optional<int32_t> token_to_id(std::string_view piece) const override {
    if (auto it = token_id_.find(escape_spaces(piece)); it != token_id_.end()) return it->second;
    if (piece.size() == 1 && byte_token_[static_cast<uint8_t>(piece[0])] >= 0)
      return byte_token_[static_cast<uint8_t>(piece[0])];
    return std::nullopt;
  }

  std::optional<int32_t> bos_id() const override { return v_.bos >= 0 ? std::optional<int32_t>(v_.bos) : std::nullopt; }
  std::optional<int32_t> eos_id() const override { return v_.eos >= 0 ? std::optional<int32_t>(v_.eos) : std::nullopt; }

  bool is_control(int32_t id) const override {
    check_id(id);
    return v_.types[static_cast<size_t>(id)] == kControl;
  }

 private:
  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
      throw_invalid("token id " + std::to_string(id) + " is outside the SentencePiece vocabulary (size " +
                    std::to_string(vocab_size()) + ")");
  }

  void encode_fragment(std::string_view fragment, bool add_prefix, std::vector<int32_t>& out) const {
    std::string text = (v_.add_space_prefix && add_prefix) ? std::string(kSpace) : std::string();
    text += escape_spaces(fragment);

    // Symbols: a doubly linked list over byte ranges of text, one UTF-8 character each to start.
    struct Sym {
      size_t start, len;
      int prev, next;
    };
    const DecodedText d = decode_utf8(text);
    std::vector<Sym> sym(d.cps.size());
    for (size_t k = 0; k < sym.size(); ++k) {
      sym[k] = {d.offsets[k], d.offsets[k + 1] - d.offsets[k], static_cast<int>(k) - 1,
                k + 1 < sym.size() ? static_cast<int>(k) + 1 : -1};
    }
    struct Bigram {
      float score;
      int left, right;
      size_t len;
      // Highest score first; on equal scores the leftmost pair.
      bool operator<(const Bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
    };
    std::priority_queue<Bigram> queue;
    auto consider = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      const size_t len = sym[l].len + sym[r].len;
      auto it = mergeable_.find(text.substr(sym[l].start, len));
      if (it != mergeable_.end()) queue.push({v_.scores[it->second], l, r, len});
    };
    for (size_t k = 1; k < sym.size(); ++k) consider(static_cast<int>(k) - 1, static_cast<int>(k));
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Sym& l = sym[b.left];
      Sym& r = sym[b.right];
      // Stale if either side was merged away or grew since the pair was queued.
      if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      consider(l.prev, b.left);
      consider(b.left, l.next);
    }
    for (int k = sym.empty() ? -1 : 0; k >= 0; k = sym[k].next) {
      const std::string_view piece = std::string_view(text).substr(sym[k].start, sym[k].len);
      if (auto it = mergeable_.find(std::string(piece)); it != mergeable_.end()) {
        out.push_back(it->second);
        continue;
      }
      for (char c : piece) {
        const int32_t bt = byte_token_[static_cast<uint8_t>(c)];
        if (bt >= 0) {
          out.push_back(bt);
        } else {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02X", static_cast<uint8_t>(c));
          FOLIO_CHECK_INPUT(v_.unk >= 0, std::string("SentencePiece vocabulary can encode byte ") + hex +
                                             " neither as a byte token nor as unk");
          out.push_back(v_.unk);
        }
      }
    }
  }

  SpmVocab v_;
  std::unordered_map<std::string, int32_t> token_id_;   // every token text -> first id with it
  std::unordered_map<std::string, int32_t> mergeable_;  // normal / user-defined tokens only
  std::array<int32_t, 256> byte_token_{};
  std::array<std::vector<int32_t>, 256> literal_;  // control / user-defined ids by first byte, longest first
  std::vector<std::string> raw_;  // id -> decoded bytes
  std::vector<bool> special_;     // control or user-defined
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(SpmVocab v) { return std::make_unique<SpmTokenizer>(std::move(v)); }

}  // namespace folio
