#include "runtime/scoring_text.h"

#include <algorithm>
#include <cstdint>
#include <regex>

#include "text/utf8.h"

namespace folio {

namespace {

// The recognizer's characters beyond ASCII (tools/train/mini2/lines.py EXTRA), bullets excluded
// here because scoring drops them on both sides.
constexpr char32_t kExtras[] = U"–—‘’“”…©®°§¶±×÷·€£¢"
                               U"ÀÁÂÄÅÆÇÈÉÊËÍÎÏÑÓÔÖØÚÛÜßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿœ";

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

// "| a | b |" -> "a b" (cells trimmed).
std::string table_row_as_text(std::string_view row) {
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

}  // namespace

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
  for (char32_t c : decode_utf8(text).cps) {
    for (char ch : mapped(c, buf)) {
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
