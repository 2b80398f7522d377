#include "doc/ocr_json.h"

#include "doc/ocr_markdown.h"
#include "text/utf8.h"

namespace folio {
namespace {

// Output can stop inside a multi-byte character; JSON strings must be valid UTF-8, so invalid
// bytes become U+FFFD.
std::string valid_utf8(const std::string& s) {
  const DecodedText d = decode_utf8(s);
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : d.cps) append_utf8(out, cp >= kInvalidUtf8Base ? char32_t(0xFFFD) : cp);
  return out;
}

}  // namespace

nlohmann::json ocr_page_to_json(const OcrPage& page, size_t index, const PageSize* size) {
  using nlohmann::json;
  json p = {{"page", index + 1}};
  if (size) {
    p["width"] = size->width;
    p["height"] = size->height;
  }
  p["markdown"] = valid_utf8(page_markdown(page));
  json blocks = json::array();
  for (const OcrBlock& b : page.blocks) {
    json jb = {{"label", valid_utf8(b.label)}, {"text", valid_utf8(b.text)}};
    json px = json::array(), norm = json::array();
    for (const OcrBox& box : b.boxes) {
      norm.push_back(box);
      if (size) px.push_back(box_to_pixels(box, size->width, size->height));
    }
    if (size) jb["boxes"] = px;
    jb["boxes_normalized"] = norm;
    if (!b.image_file.empty()) jb["file"] = valid_utf8(b.image_file), jb["caption"] = valid_utf8(b.image_alt);
    blocks.push_back(std::move(jb));
  }
  p["blocks"] = std::move(blocks);
  return p;
}

nlohmann::json ocr_to_json(const std::vector<OcrPage>& pages, std::span<const PageSize> page_sizes) {
  nlohmann::json out_pages = nlohmann::json::array();
  for (size_t i = 0; i < pages.size(); ++i)
    out_pages.push_back(ocr_page_to_json(pages[i], i, i < page_sizes.size() ? &page_sizes[i] : nullptr));
  return nlohmann::json{{"pages", std::move(out_pages)}};
}

}  // namespace folio
