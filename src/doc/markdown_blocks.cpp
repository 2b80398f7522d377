#include "doc/markdown_blocks.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace folio {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string label_of(std::string_view block) {
  if (starts_with(block, "# ")) return "title";
  if (starts_with(block, "##")) return "sub_title";
  if (starts_with(block, "```")) return "code";
  if (starts_with(block, "|")) return "table";
  if (starts_with(block.substr(std::min(block.find_first_not_of(' '), block.size())), "- ")) return "list";  // nested items too
  size_t digits = 0;
  while (digits < block.size() && std::isdigit(static_cast<unsigned char>(block[digits]))) ++digits;
  if (digits > 0 && (starts_with(block.substr(digits), ". ") || starts_with(block.substr(digits), ") "))) return "list";
  return "text";
}

}  // namespace

std::vector<OcrBlock> markdown_blocks(std::string_view md) {
  std::vector<OcrBlock> out;
  auto add = [&](std::string_view piece) {
    if (!piece.empty()) out.push_back({label_of(piece), {}, std::string(piece)});
  };
  bool fenced = false;
  size_t start = 0;
  for (size_t i = 0; i < md.size(); ++i) {
    const bool line_start = i == 0 || md[i - 1] == '\n';
    if (line_start && starts_with(md.substr(i), "```")) fenced = !fenced;
    // A cut: exactly one blank line ("\n\n" followed by text), outside a fence, after some text.
    if (!fenced && md[i] == '\n' && i + 2 < md.size() && md[i + 1] == '\n' && md[i + 2] != '\n' && i > start) {
      add(md.substr(start, i - start));
      start = i + 2;
      i += 1;
    }
  }
  add(md.substr(start));
  return out;
}

}  // namespace folio
