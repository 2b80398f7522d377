// PDF input through poppler-cpp: page count and pages rendered to RGB or gray.
//
// Promises:
//  - open() refuses, with InvalidInput naming the file, a file that cannot be read, a file
//    poppler cannot parse (corrupt or not a PDF), an encrypted PDF that needs a password (it is
//    locked without one; encrypted files that open with the empty password are read normally),
//    a PDF with no pages, and one holding an image of more pixels than kMaxPdfImagePixels
//    (pdf_image_guard.h);
//  - render_page(i, dpi) rasterises page i (0-based) at dpi with anti-aliasing on a white page and
//    returns plain RGB, render_page_gray the same in gray (the official recipe renders with PyMuPDF at 300 DPI; poppler's rasteriser
//    is not pixel-identical to it). The page's /Rotate is applied. A page whose rendered size would
//    exceed kMaxImageSide on a side, or fall below kMinImageSide, is InvalidInput naming the file,
//    page and size, before anything is rendered;
//  - poppler's own diagnostics do not reach stderr; the last one is appended to open errors.
// Not thread-safe: render pages of one document from one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "doc/image.h"

namespace poppler {
class document;
class image;
}

namespace folio {

inline constexpr double kDefaultPdfDpi = 300.0;

class PdfDocument {
 public:
  static PdfDocument open(const std::string& path);

  PdfDocument(PdfDocument&&) noexcept;
  PdfDocument& operator=(PdfDocument&&) noexcept;
  ~PdfDocument();

  int page_count() const { return page_count_; }
  const std::string& path() const { return path_; }

  // Size in pixels that render_page(index, dpi) produces (after the page's rotation).
  std::pair<int, int> page_pixel_size(int index, double dpi = kDefaultPdfDpi) const;

  RgbImage render_page(int index, double dpi = kDefaultPdfDpi) const;
  // gray_bytes(render_page(index, dpi)), the same bytes, without the RGB page in between (poppler
  // renders 3 bytes a pixel instead of 4, converted row by row), for readers that only want gray.
  GrayImage render_page_gray(int index, double dpi = kDefaultPdfDpi) const;

 private:
  PdfDocument(std::string path, std::unique_ptr<poppler::document> doc, int pages);
  void check_page(int index, double dpi) const;
  // The page rendered in a poppler::image::format_enum, checked as render_page promises.
  poppler::image render_poppler(int index, double dpi, int format) const;

  std::string path_;
  std::unique_ptr<poppler::document> doc_;
  int page_count_ = 0;
};

}  // namespace folio
