#include "doc/markdown_blocks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
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

// "<!-- image [x0, y0, x1, y1] -->", as page_markdown writes an image block with one box.
std::optional<OcrBox> image_box(std::string_view block) {
  constexpr std::string_view head = "<!-- image [", tail = "] -->";
  if (!starts_with(block, head) || block.size() < head.size() + tail.size() || block.substr(block.size() - tail.size()) != tail)
    return std::nullopt;
  OcrBox box{};
  std::string_view rest = block.substr(head.size(), block.size() - head.size() - tail.size());
  for (int k = 0; k < 4; ++k) {
    int v = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc()) return std::nullopt;
    box[size_t(k)] = v;
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (k < 3) {
      if (!starts_with(rest, ", ")) return std::nullopt;
      rest.remove_prefix(2);
    }
  }
  if (!rest.empty()) return std::nullopt;
  return box;
}

}  // namespace

std::vector<OcrBlock> markdown_blocks(std::string_view md) {
  std::vector<OcrBlock> out;
  auto add = [&](std::string_view piece) {
    if (piece.empty()) return;
    if (const std::optional<OcrBox> box = image_box(piece)) out.push_back({"image", {*box}, "", "", ""});
    else out.push_back({label_of(piece), {}, std::string(piece), "", ""});
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
