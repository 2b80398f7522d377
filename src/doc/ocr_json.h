// JSON from parsed OCR pages, with boxes in page pixels.
//
// Promises: {"pages": [{"page": N (1-based), "width": W, "height": H, "markdown": "...",
//   "blocks": [{"label": "...", "text": "...", "boxes": [[x1, y1, x2, y2], ...] (pixels),
//               "boxes_normalized": [[...], ...] (0..999 as written)}]}]}
// page_sizes[i] is the pixel size of page i (the image the model saw, before preprocessing);
// pages beyond page_sizes (the model wrote more <PAGE>s than there were pages) have no width,
// height or pixel "boxes", only "boxes_normalized". Bytes that are not valid UTF-8 (output cut
// inside a character) become U+FFFD, so the result always dumps.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "doc/ocr_output.h"

namespace folio {

struct PageSize {
  int width = 0;
  int height = 0;
};

nlohmann::json ocr_to_json(const std::vector<OcrPage>& pages, std::span<const PageSize> page_sizes);

// One element of "pages": page `index` (0-based), sized when `size` is given. ocr_to_json's pages
// are exactly these, so a document written page by page equals the whole one.
nlohmann::json ocr_page_to_json(const OcrPage& page, size_t index, const PageSize* size);

}  // namespace folio
