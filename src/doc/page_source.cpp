#include "doc/page_source.h"

#include <cstring>
#include <fstream>
#include <string_view>

#include "core/error.h"

namespace folio {

bool looks_like_pdf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  char head[1024];
  f.read(head, sizeof head);
  return std::string_view(head, static_cast<size_t>(f.gcount())).find("%PDF-") != std::string_view::npos;
}

PageSource PageSource::open(const std::string& path, double pdf_dpi) {
  PageSource s;
  s.path_ = path;
  s.dpi_ = pdf_dpi;
  if (looks_like_pdf(path)) {
    s.pdf_.emplace(PdfDocument::open(path));
  } else {
    s.image_.emplace(load_image(path));
  }
  return s;
}

RgbImage PageSource::page(int index) const {
  FOLIO_CHECK_INPUT(index >= 0 && index < page_count(),
                    "page " + std::to_string(index + 1) + " of '" + path_ + "' does not exist (it has " +
                        std::to_string(page_count()) + (page_count() == 1 ? " page)" : " pages)"));
  if (pdf_) return pdf_->render_page(index, dpi_);
  return *image_;
}

}  // namespace folio
