#include "text/pretokenizer.h"

#include "text/unicode_class.h"
#include "text/utf8.h"

namespace folio {
namespace {

// The regexes as tokenizer.json files spell them once JSON-decoded; \r and \n inside classes are
// literal CR / LF characters in the DeepSeek file. Comparison canonicalises both spellings.
constexpr std::string_view kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kDeepSeekDigitsRegex = "\\p{N}{1,3}";
constexpr std::string_view kDeepSeekCjkRegex = "[一-龥぀-ゟ゠-ヿ]+";
constexpr std::string_view kDeepSeekMainRegex =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

std::string canonical(std::string_view regex) {
  std::string out;
  for (char c : regex) {
    if (c == '\r') out += "\\r";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// ---- character predicates ---------------------------------------------------------------------

bool is_letter(char32_t c) { return unicode_class(c) == UnicodeClass::Letter; }
bool is_number(char32_t c) { return unicode_class(c) == UnicodeClass::Number; }
bool is_ws(char32_t c) { return unicode_is_whitespace(c); }
bool is_crlf(char32_t c) { return c == '\r' || c == '\n'; }
bool is_ascii_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_letter_or_mark(char32_t c) {
  const UnicodeClass k = unicode_class(c);
  return k == UnicodeClass::Letter || k == UnicodeClass::Mark;
}
bool is_punct_or_symbol(char32_t c) {
  const UnicodeClass k = unicode_class(c);
  return k == UnicodeClass::Punct || k == UnicodeClass::Symbol;
}
// [^\s\p{L}\p{N}]
bool is_gpt2_other(char32_t c) { return !is_ws(c) && !is_letter(c) && !is_number(c); }
// The 32 ASCII characters of DeepSeek's [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~].
bool is_ascii_punct(char32_t c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}
bool is_deepseek_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) || (c >= 0x30A0 && c <= 0x30FF);
}

// Length of the run of characters from pos (below end) that satisfy pred.
template <typename Pred>
size_t run(const char32_t* s, size_t pos, size_t end, Pred pred) {
  size_t i = pos;
  while (i < end && pred(s[i])) ++i;
  return i - pos;
}

// ---- alternatives shared by several patterns --------------------------------------------------

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive; first listed alternative wins.
size_t match_contraction(const char32_t* s, size_t p, size_t end, bool ignore_case) {
  if (s[p] != '\'') return 0;
  auto eq = [&](size_t i, char c) {
    if (i >= end) return false;
    char32_t x = s[i];
    if (ignore_case && x >= 'A' && x <= 'Z') x = x - 'A' + 'a';
    return x == static_cast<char32_t>(c);
  };
  static constexpr std::string_view kSuffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
  for (std::string_view suf : kSuffixes) {
    bool ok = true;
    for (size_t k = 0; k < suf.size() && ok; ++k) ok = eq(p + 1 + k, suf[k]);
    if (ok) return 1 + suf.size();
  }
  return 0;
}

// \s*[\r\n]+ : greedy \s* backs off to the last CR/LF of the whitespace run, then [\r\n]+ takes it.
size_t match_ws_to_newline(const char32_t* s, size_t p, size_t end) {
  const size_t n = run(s, p, end, is_ws);
  for (size_t k = n; k > 0; --k) {
    if (is_crlf(s[p + k - 1])) return k;
  }
  return 0;
}

// \s+(?!\S)|\s+ : a whitespace run, less its last character when a non-space follows it (so that
// character can prefix the next word), unless that would leave nothing.
size_t match_ws_tail(const char32_t* s, size_t p, size_t end) {
  const size_t n = run(s, p, end, is_ws);
  if (n == 0) return 0;
  if (p + n == end || n == 1) return n;
  return n - 1;
}

// ---- the patterns ---------------------------------------------------------------------------

size_t match_gpt2(const char32_t* s, size_t p, size_t end) {
  if (size_t n = match_contraction(s, p, end, false)) return n;
  const bool space = s[p] == ' ' && p + 1 < end;
  const size_t q = space ? p + 1 : p;
  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ ; each alternative may take the optional space.
  for (auto pred : {is_letter, is_number, is_gpt2_other}) {
    if (space && pred(s[q])) return 1 + run(s, q, end, pred);
    if (pred(s[p])) return run(s, p, end, pred);
  }
  return match_ws_tail(s, p, end);
}

size_t match_llama3(const char32_t* s, size_t p, size_t end) {
  if (size_t n = match_contraction(s, p, end, true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  const char32_t c = s[p];
  if (!is_crlf(c) && !is_letter(c) && !is_number(c) && p + 1 < end && is_letter(s[p + 1]))
    return 1 + run(s, p + 1, end, is_letter);
  if (is_letter(c)) return run(s, p, end, is_letter);
  // \p{N}{1,3}
  if (is_number(c)) {
    const size_t n = run(s, p, end, is_number);
    return n < 3 ? n : 3;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  {
    size_t q = p;
    if (c == ' ' && q + 1 < end && is_gpt2_other(s[q + 1])) ++q;
    if (is_gpt2_other(s[q])) {
      q += run(s, q, end, is_gpt2_other);
      q += run(s, q, end, is_crlf);
      return q - p;
    }
  }
  if (size_t n = match_ws_to_newline(s, p, end)) return n;
  return match_ws_tail(s, p, end);
}

size_t match_deepseek_main(const char32_t* s, size_t p, size_t end) {
  const char32_t c = s[p];
  // [!"#...~][A-Za-z]+
  if (is_ascii_punct(c) && p + 1 < end && is_ascii_letter(s[p + 1])) return 1 + run(s, p + 1, end, is_ascii_letter);
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
  if (!is_crlf(c) && !is_letter(c) && !is_punct_or_symbol(c) && p + 1 < end && is_letter_or_mark(s[p + 1]))
    return 1 + run(s, p + 1, end, is_letter_or_mark);
  if (is_letter_or_mark(c)) return run(s, p, end, is_letter_or_mark);
  //  ?[\p{P}\p{S}]+[\r\n]*
  {
    size_t q = p;
    if (c == ' ' && q + 1 < end && is_punct_or_symbol(s[q + 1])) ++q;
    if (is_punct_or_symbol(s[q])) {
      q += run(s, q, end, is_punct_or_symbol);
      q += run(s, q, end, is_crlf);
      return q - p;
    }
  }
  if (size_t n = match_ws_to_newline(s, p, end)) return n;
  return match_ws_tail(s, p, end);
}

size_t match(SplitPattern pattern, const char32_t* s, size_t p, size_t end) {
  switch (pattern) {
    case SplitPattern::Gpt2: return match_gpt2(s, p, end);
    case SplitPattern::Llama3: return match_llama3(s, p, end);
    case SplitPattern::DeepSeekV3Digits: {
      const size_t n = run(s, p, end, is_number);
      return n < 3 ? n : 3;
    }
    case SplitPattern::DeepSeekV3Cjk: return run(s, p, end, is_deepseek_cjk);
    case SplitPattern::DeepSeekV3Main: return match_deepseek_main(s, p, end);
  }
  return 0;
}

}  // namespace

std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex) {
  const std::string c = canonical(regex);
  for (SplitPattern p : {SplitPattern::Gpt2, SplitPattern::Llama3, SplitPattern::DeepSeekV3Digits,
                         SplitPattern::DeepSeekV3Cjk, SplitPattern::DeepSeekV3Main}) {
    if (c == canonical(split_pattern_regex(p))) return p;
  }
  return std::nullopt;
}

std::string split_pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::Gpt2: return std::string(kGpt2Regex);
    case SplitPattern::Llama3: return std::string(kLlama3Regex);
    case SplitPattern::DeepSeekV3Digits: return std::string(kDeepSeekDigitsRegex);
    case SplitPattern::DeepSeekV3Cjk: return std::string(kDeepSeekCjkRegex);
    case SplitPattern::DeepSeekV3Main: return std::string(kDeepSeekMainRegex);
  }
  return {};
}

std::vector<std::pair<size_t, size_t>> pre_tokenize(std::string_view text,
                                                    const std::vector<SplitPattern>& patterns) {
  if (text.empty()) return {};
  const DecodedText d = decode_utf8(text);
  // Pieces as code point ranges; each pattern re-cuts every piece independently, as a regex run
  // on that piece alone would (so lookaheads and runs stop at piece boundaries).
  std::vector<std::pair<size_t, size_t>> pieces{{0, d.cps.size()}}, next;
  for (SplitPattern pattern : patterns) {
    next.clear();
    for (auto [begin, end] : pieces) {
      size_t gap = begin, p = begin;
      while (p < end) {
        const size_t n = match(pattern, d.cps.data(), p, end);
        if (n == 0) {
          ++p;
          continue;
        }
        if (gap < p) next.emplace_back(gap, p);
        next.emplace_back(p, p + n);
        p += n;
        gap = p;
      }
      if (gap < end) next.emplace_back(gap, end);
    }
    pieces.swap(next);
  }
  for (auto& [b, e] : pieces) {
    b = d.offsets[b];
    e = d.offsets[e];
  }
  return pieces;
}

}  // namespace folio
