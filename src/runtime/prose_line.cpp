#include "runtime/prose_line.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace folio {

namespace {

constexpr std::array<std::string_view, 40> kFunctionWords = {
    "the", "a",    "an",   "of",    "to",   "in",    "is",   "are",   "was",  "be",    "and",  "or",  "for",  "with",
    "that", "this", "it",  "its",   "by",   "on",    "as",   "if",    "not",  "from",  "at",   "which", "when", "than",
    "then", "there", "these", "can", "may", "will", "must", "should", "has",  "have"};

bool letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// A word of letters: letters with ' or - inside, ( [ " ' ` before, and . , ; : ! ? ) ] " ' after.
// Returns its letters lower-cased, or "" when it is not one.
std::string letter_word(std::string_view w) {
  size_t a = 0, b = w.size();
  while (a < b && std::string_view("([\"'`").find(w[a]) != std::string_view::npos) ++a;
  while (b > a && std::string_view(".,;:!?)]\"'").find(w[b - 1]) != std::string_view::npos) --b;
  if (a == b || !letter(w[a]) || !letter(w[b - 1])) return "";
  std::string out;
  for (size_t i = a; i < b; ++i) {
    const char c = w[i];
    if (letter(c)) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c != '\'' && c != '-') return "";
  }
  return out;
}

bool starts_like_code(std::string_view line) {
  for (std::string_view m : {"#", "//", "/*", "*", "--", ";", "%", "$", ">"})
    if (line.substr(0, m.size()) == m) return true;
  return false;
}

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// A call: a name and "(" at once, unless it is a manual section as in read(2) or ssl(3p).
bool has_call(std::string_view line) {
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] != '(' || !ident(line[i - 1])) continue;
    size_t j = i + 1;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    const bool section = j > i + 1 && [&] {
      while (j < line.size() && std::islower(static_cast<unsigned char>(line[j]))) ++j;
      return j < line.size() && line[j] == ')';
    }();
    if (!section) return true;
  }
  return false;
}

bool has_operator(std::string_view line) {
  for (std::string_view op : {"==", "!=", "->", "::", "&&", "||", "+=", "-=", "*/", "/*", "__", "=>", "<-", ">/", "[]", "{}", "):"})
    if (line.find(op) != std::string_view::npos) return true;
  return false;
}

bool keyword(std::string_view w) {
  for (std::string_view k : {"if", "for", "while", "else", "elif", "def", "return", "import", "case", "do", "done", "fi",
                             "then", "esac", "let", "var", "const", "function", "class", "try", "except", "switch"})
    if (w == k) return true;
  return false;
}

}  // namespace

bool reads_as_prose(std::string_view line) {
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
  if (line.empty() || starts_like_code(line) || has_call(line) || has_operator(line)) return false;
  if (line.back() == '{' || line.back() == '}' || line.back() == ';') return false;
  if (line.size() > 1 && line.front() == '"' && line.back() == '"') return false;  // a string literal
  std::vector<std::string_view> words;
  for (size_t i = 0; i < line.size();) {
    const size_t end = std::min(line.find(' ', i), line.size());
    if (end > i) words.push_back(line.substr(i, end - i));
    i = end + 1;
  }
  if (static_cast<int>(words.size()) < kProseMinWords) return false;
  int lettered = 0;
  std::set<std::string> function_words;
  for (std::string_view w : words) {
    const std::string lw = letter_word(w);
    if (lw.empty()) continue;
    ++lettered;
    if (std::find(kFunctionWords.begin(), kFunctionWords.end(), lw) != kFunctionWords.end()) function_words.insert(lw);
  }
  // A line that opens with a keyword of code is code when it ends with ':', quotes a string or holds
  // a word that is not one of letters.
  if (keyword(words.front()) &&
      (line.back() == ':' || line.find('"') != std::string_view::npos || lettered < static_cast<int>(words.size())))
    return false;
  return lettered * 10 >= static_cast<int>(words.size()) * 7 && function_words.size() >= 2;
}

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

std::string_view without_comma(std::string_view w) { return !w.empty() && w.back() == ',' ? w.substr(0, w.size() - 1) : w; }

// -x, --long, --long=VALUE, --long[=VALUE], a comma after.
bool option_word(std::string_view w) {
  w = without_comma(w);
  std::string_view name = w.substr(0, w.find('='));
  const size_t dashes = name.substr(0, 2) == "--" ? 2 : name.substr(0, 1) == "-" ? 1 : 0;
  std::string_view body = name.substr(dashes);
  body = body.substr(0, body.find('['));
  return dashes > 0 && !body.empty() && letter(body[0]) &&
         std::all_of(body.begin(), body.end(), [](char c) { return ident_char(c) || c == '-'; });
}

// FILE, <path>, [=literal], {keys}, a comma after.
bool metavariable_word(std::string_view w) {
  w = without_comma(w);
  const std::string_view brackets = "[]<>{}()";
  while (!w.empty() && brackets.find(w.front()) != std::string_view::npos) w.remove_prefix(1);
  while (!w.empty() && brackets.find(w.back()) != std::string_view::npos) w.remove_suffix(1);
  return !w.empty() && letter(w[0]) &&
         std::all_of(w.begin(), w.end(), [](char c) { return ident_char(c) || std::string_view("-.=|").find(c) != std::string_view::npos; });
}

}  // namespace

bool is_option_term(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == ' ') { ++i; continue; }
    const size_t e = std::min(line.find(' ', i), line.size());
    words.push_back(line.substr(i, e - i));
    i = e;
  }
  if (words.empty() || words.size() > size_t(kOptionTermMaxWords) || !option_word(words[0])) return false;
  return std::all_of(words.begin() + 1, words.end(),
                     [](std::string_view w) { return option_word(w) || metavariable_word(w) || w == "|" || w == ","; });
}

}  // namespace folio
