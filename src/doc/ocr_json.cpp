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

nlohmann::json ocr_to_json(const std::vector<OcrPage>& pages, std::span<const PageSize> page_sizes) {
  using nlohmann::json;
  json out_pages = json::array();
  for (size_t i = 0; i < pages.size(); ++i) {
    const bool sized = i < page_sizes.size();
    json p = {{"page", i + 1}};
    if (sized) {
      p["width"] = page_sizes[i].width;
      p["height"] = page_sizes[i].height;
    }
    p["markdown"] = valid_utf8(page_markdown(pages[i]));
    json blocks = json::array();
    for (const OcrBlock& b : pages[i].blocks) {
      json jb = {{"label", valid_utf8(b.label)}, {"text", valid_utf8(b.text)}};
      json px = json::array(), norm = json::array();
      for (const OcrBox& box : b.boxes) {
        norm.push_back(box);
        if (sized) px.push_back(box_to_pixels(box, page_sizes[i].width, page_sizes[i].height));
      }
      if (sized) jb["boxes"] = px;
      jb["boxes_normalized"] = norm;
      blocks.push_back(std::move(jb));
    }
    p["blocks"] = std::move(blocks);
    out_pages.push_back(std::move(p));
  }
  return json{{"pages", std::move(out_pages)}};
}

}  // namespace folio
