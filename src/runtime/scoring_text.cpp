#include "runtime/scoring_text.h"

#include <algorithm>
#include <cstdint>
#include <regex>

namespace folio {

namespace {

// The recognizer's characters beyond ASCII (tools/train/mini2/lines.py EXTRA), bullets excluded
// here because scoring drops them on both sides.
constexpr char32_t kExtras[] = U"–—‘’“”…©®°§¶±×÷·€£¢"
                               U"ÀÁÂÄÅÆÇÈÉÊËÍÎÏÑÓÔÖØÚÛÜßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿœ";

// One code point from the front of s (which it consumes), or U+FFFD for an invalid byte.
char32_t next_code_point(std::string_view& s) {
  const auto b = static_cast<unsigned char>(s[0]);
  const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (len == 0 || static_cast<size_t>(len) > s.size()) {
    s.remove_prefix(1);
    return 0xFFFD;
  }
  char32_t c = len == 1 ? b : b & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    const auto cont = static_cast<unsigned char>(s[static_cast<size_t>(i)]);
    if ((cont >> 6) != 2) {
      s.remove_prefix(1);
      return 0xFFFD;
    }
    c = (c << 6) | (cont & 0x3F);
  }
  s.remove_prefix(static_cast<size_t>(len));
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// What one code point is scored as ("" = dropped).
std::string_view mapped(char32_t c, std::string& buf) {
  switch (c) {
    case 0x2010: case 0x2011: case 0x2212: return "-";
    case 0x00AD: return "";
    case '\t': case '\n': case '\r': case 0x00A0: case 0x2002: case 0x2003: case 0x2009: return " ";
    case 0xFB00: return "ff";
    case 0xFB01: return "fi";
    case 0xFB02: return "fl";
    case 0xFB03: return "ffi";
    case 0xFB04: return "ffl";
    default: break;
  }
  const bool ascii = c >= 32 && c < 127;
  if (!ascii && std::find(std::begin(kExtras), std::end(kExtras) - 1, c) == std::end(kExtras) - 1) return "";
  buf.clear();
  append_utf8(buf, c);
  return buf;
}

}  // namespace

// "| a | b |" -> "a b" (cells trimmed).
static std::string table_row_as_text(std::string_view row) {
  std::string_view cells = row.substr(2, row.size() - 4);
  std::string out;
  while (true) {
    const size_t bar = cells.find(" | ");
    std::string_view cell = cells.substr(0, bar);
    while (!cell.empty() && cell.front() == ' ') cell.remove_prefix(1);
    while (!cell.empty() && cell.back() == ' ') cell.remove_suffix(1);
    if (!out.empty()) out += ' ';
    out += cell;
    if (bar == std::string_view::npos) return out;
    cells.remove_prefix(bar + 3);
  }
}

std::string markdown_as_text(std::string_view markdown) {
  static const std::regex separator_row(R"(\|( ?:?-+:? ?\|)+)");
  static const std::regex heading(R"(^#{1,6} )");
  std::string out;
  bool first = true;
  for (size_t at = 0; at <= markdown.size();) {
    const size_t end = std::min(markdown.find('\n', at), markdown.size());
    std::string line(markdown.substr(at, end - at));
    at = end + 1;
    if (line.starts_with("<!-- page") || line.starts_with("```") || std::regex_match(line, separator_row)) continue;
    line = std::regex_replace(line, heading, "", std::regex_constants::format_first_only);
    if (line.starts_with("- ")) line.erase(0, 2);
    if (line.size() >= 4 && line.starts_with("| ") && line.ends_with(" |")) line = table_row_as_text(line);
    if (!first) out += '\n';
    out += line;
    first = false;
  }
  return out;
}

std::string scoring_text(std::string_view text) {
  std::string out, buf;
  bool space = false;
  while (!text.empty()) {
    const std::string_view m = mapped(next_code_point(text), buf);
    for (char ch : m) {
      if (ch == ' ') {
        space = !out.empty();
        continue;
      }
      if (space) out += ' ';
      space = false;
      out += ch;
    }
  }
  return out;
}

}  // namespace folio
