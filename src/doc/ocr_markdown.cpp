#include "doc/ocr_markdown.h"

#include "doc/html_table.h"

namespace folio {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

std::string box_string(const OcrBox& b) {
  std::string s = "[";
  for (int i = 0; i < 4; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(b[i]);
  }
  s += ']';
  return s;
}

}  // namespace

std::string page_markdown(const OcrPage& page) {
  std::string md;
  auto add = [&](const std::string& piece) {
    if (piece.empty()) return;
    if (!md.empty()) md += "\n\n";
    md += piece;
  };
  for (const OcrBlock& b : page.blocks) {
    if (b.label == "image" && !b.image_file.empty()) {
      add("![" + b.image_alt + "](" + b.image_file + ")");
    } else if (b.label == "image") {
      std::string comment = "<!-- image";
      for (const OcrBox& box : b.boxes) {
        comment += ' ';
        comment += box_string(box);
      }
      comment += " -->";
      add(comment);
    }
    std::string text = convert_html_tables(b.text);
    replace_all(text, "\\coloneqq", ":=");
    replace_all(text, "\\eqqcolon", "=:");
    add(text);
  }
  return md;
}

std::string document_markdown_piece(const OcrPage& page, size_t index, size_t total) {
  if (total == 1) return page_markdown(page);
  std::string md = index > 0 ? "\n\n" : "";
  md += "<!-- page " + std::to_string(index + 1) + " -->";
  const std::string body = page_markdown(page);
  if (!body.empty()) md += "\n\n" + body;
  return md;
}

std::string document_markdown(const std::vector<OcrPage>& pages) {
  std::string md;
  for (size_t i = 0; i < pages.size(); ++i) md += document_markdown_piece(pages[i], i, pages.size());
  return md;
}

}  // namespace folio
