// PageSource: the pages of one input file, whatever its format.
//
// Promises: open() recognises a PDF by its "%PDF-" signature (within the first 1024 bytes, as
// readers allow) and anything else is decoded as an image (PNG / JPEG, image.h), so a misnamed
// file still works and a non-image, non-PDF file gets the image decoder's InvalidInput naming it.
// A PDF's pages are rendered one at a time on demand at the DPI given to open() (memory stays at
// one page); an image is decoded once at open() and is the single page 0. Every error is
// InvalidInput naming the file (see pdf_document.h, image.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "doc/image.h"
#include "doc/pdf_document.h"

namespace folio {

class PageSource {
 public:
  static PageSource open(const std::string& path, double pdf_dpi = kDefaultPdfDpi);

  bool is_pdf() const { return pdf_.has_value(); }
  int page_count() const { return pdf_ ? pdf_->page_count() : 1; }
  const std::string& path() const { return path_; }

  // Page `index` (0-based) as RGB; InvalidInput naming the file for an index out of range.
  RgbImage page(int index) const;

 private:
  std::string path_;
  double dpi_ = kDefaultPdfDpi;
  std::optional<PdfDocument> pdf_;
  std::optional<RgbImage> image_;
};

// True when the file starts (within its first 1024 bytes) with the PDF signature "%PDF-".
bool looks_like_pdf(const std::string& path);

}  // namespace folio
