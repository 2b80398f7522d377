// OcrPages: the pages of the inputs given to `folio ocr`, in order, checked up front and rendered
// one at a time.
//
// Promises:
//  - inputs are PDFs, PNG / JPEG images (recognised by content, page_source.h), or directories,
//    which contribute their .png / .jpg / .jpeg files (any case; not recursive) sorted by name; a
//    directory without such files is InvalidInput naming it;
//  - every input is opened and checked by open(), before any model work: a missing, corrupt,
//    encrypted or zero-page PDF, or an undecodable or out-of-range-size image (refused from its
//    header, before its pixels are decoded) is InvalidInput naming the file;
//  - pages are numbered 1.. across all inputs in order; `page_range` (page_range.h syntax, "" = all)
//    selects among them, InvalidInput naming the range and the page count otherwise;
//  - open() keeps only the PDF documents and the pages' sizes; render(i) produces page i's pixels
//    on demand (a PDF page rendered at the DPI given, an image decoded again), so memory holds one
//    page at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "doc/image.h"
#include "doc/ocr_json.h"
#include "doc/pdf_document.h"

namespace folio {

struct OcrPageRef {
  std::string file;     // the file the page comes from
  bool pdf = false;
  int index = 0;        // 0-based page within the file
  int number = 0;       // 1-based page number across all inputs (before the range selection)
  int width = 0;        // pixels, as render() produces them
  int height = 0;
};

class OcrPages {
 public:
  static OcrPages open(const std::vector<std::string>& inputs, std::string_view page_range = {},
                       double pdf_dpi = kDefaultPdfDpi);

  size_t size() const { return pages_.size(); }
  const OcrPageRef& page(size_t i) const { return pages_.at(i); }
  // The selected pages' sizes (for ocr_to_json).
  std::vector<PageSize> sizes() const;
  // "file" or "file page N", for messages.
  std::string describe(size_t i) const;

  RgbImage render(size_t i) const;
  // Page i in gray: a PDF page rendered in gray by poppler, an image as gray_image() of its RGB.
  GrayImage render_gray(size_t i) const;

 private:
  std::vector<OcrPageRef> pages_;
  std::vector<std::shared_ptr<PdfDocument>> docs_;  // per page: its document (null for images)
  double dpi_ = kDefaultPdfDpi;
};

// The files an input names: itself, or a directory's images sorted by name.
std::vector<std::string> expand_ocr_input(const std::string& input);

}  // namespace folio
