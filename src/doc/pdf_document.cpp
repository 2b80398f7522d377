#include "doc/pdf_document.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>

#include "core/error.h"
#include "doc/gray_page.h"
#include "doc/pdf_image_guard.h"

namespace folio {
namespace {

// poppler reports parse problems through one process-wide callback; keep the last message so
// errors can say what poppler saw, and keep poppler from writing to stderr.
thread_local std::string g_last_poppler_message;

void on_poppler_message(const std::string& msg, void*) { g_last_poppler_message = msg; }

void install_poppler_handler() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function(on_poppler_message, nullptr); });
}

std::string poppler_detail() {
  return g_last_poppler_message.empty() ? std::string() : " (poppler: " + g_last_poppler_message + ")";
}

}  // namespace

PdfDocument::PdfDocument(std::string path, std::unique_ptr<poppler::document> doc, int pages)
    : path_(std::move(path)), doc_(std::move(doc)), page_count_(pages) {}
PdfDocument::PdfDocument(PdfDocument&&) noexcept = default;
PdfDocument& PdfDocument::operator=(PdfDocument&&) noexcept = default;
PdfDocument::~PdfDocument() = default;

PdfDocument PdfDocument::open(const std::string& path) {
  install_poppler_handler();
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw_invalid("cannot open PDF file '" + path + "': " + std::strerror(errno));
  }
  check_pdf_file_images(path);  // before poppler can spend minutes on an image's declared rows
  g_last_poppler_message.clear();
  std::unique_ptr<poppler::document> doc(poppler::document::load_from_file(path));
  if (!doc) throw_invalid("cannot read PDF '" + path + "': corrupt or not a PDF" + poppler_detail());
  if (doc->is_locked()) {
    throw_invalid("PDF '" + path + "' is encrypted and needs a password; password-protected PDFs are not supported");
  }
  const int pages = doc->pages();
  if (pages <= 0) throw_invalid("PDF '" + path + "' has no pages" + poppler_detail());
  return PdfDocument(path, std::move(doc), pages);
}

void PdfDocument::check_page(int index, double dpi) const {
  FOLIO_CHECK_INPUT(index >= 0 && index < page_count_, "page " + std::to_string(index + 1) + " of PDF '" + path_ +
                                                           "' does not exist (it has " + std::to_string(page_count_) +
                                                           " pages)");
  FOLIO_CHECK_INPUT(std::isfinite(dpi) && dpi >= 1.0 && dpi <= 2400.0,
                    "render resolution " + std::to_string(dpi) + " DPI for PDF '" + path_ + "' must be in [1, 2400]");
}

std::pair<int, int> PdfDocument::page_pixel_size(int index, double dpi) const {
  check_page(index, dpi);
  std::unique_ptr<poppler::page> page(doc_->create_page(index));
  if (!page) throw_invalid("cannot read page " + std::to_string(index + 1) + " of PDF '" + path_ + "'" + poppler_detail());
  const poppler::rectf box = page->page_rect(poppler::crop_box);
  // Splash sizes its bitmap as (int)(points * dpi / 72 + 0.5); a 90/270 degree /Rotate swaps them.
  // A page box no int holds (a MediaBox of 1e25 points) is refused here: converting it is undefined.
  const double wd = box.width() * dpi / 72.0 + 0.5, hd = box.height() * dpi / 72.0 + 0.5;
  constexpr double kMaxSide = 1 << 30;
  FOLIO_CHECK_INPUT(std::isfinite(wd) && std::isfinite(hd) && std::fabs(wd) < kMaxSide && std::fabs(hd) < kMaxSide,
                    "page " + std::to_string(index + 1) + " of PDF '" + path_ + "' is " + std::to_string(box.width()) + " x " +
                        std::to_string(box.height()) + " points: too large to render");
  int w = static_cast<int>(wd);
  int h = static_cast<int>(hd);
  const auto o = page->orientation();
  if (o == poppler::page::landscape || o == poppler::page::seascape) std::swap(w, h);
  return {w, h};
}

poppler::image PdfDocument::render_poppler(int index, double dpi, int format) const {
  const auto [pw, ph] = page_pixel_size(index, dpi);
  const std::string what = "page " + std::to_string(index + 1) + " of PDF '" + path_ + "' at " +
                           std::to_string(static_cast<int>(std::lround(dpi))) + " DPI";
  check_image_size(pw, ph, what);
  std::unique_ptr<poppler::page> page(doc_->create_page(index));
  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_image_format(static_cast<poppler::image::format_enum>(format));
  renderer.set_paper_color(0xffffffff);
  g_last_poppler_message.clear();
  poppler::image img = renderer.render_page(page.get(), dpi, dpi);
  if (!img.is_valid() || img.width() <= 0 || img.height() <= 0) {
    throw_invalid("cannot render " + what + poppler_detail());
  }
  check_image_size(img.width(), img.height(), what);
  return img;
}

RgbImage PdfDocument::render_page(int index, double dpi) const {
  const poppler::image img = render_poppler(index, dpi, poppler::image::format_argb32);
  RgbImage out(img.width(), img.height());
  const char* data = img.const_data();
  for (int y = 0; y < out.height; ++y) {
    const char* src = data + static_cast<size_t>(y) * img.bytes_per_row();
    uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      uint32_t v;  // one native-endian 0xAARRGGBB word per pixel; the page is opaque white paper
      std::memcpy(&v, src + 4 * static_cast<size_t>(x), 4);
      dst[3 * x] = static_cast<uint8_t>(v >> 16);
      dst[3 * x + 1] = static_cast<uint8_t>(v >> 8);
      dst[3 * x + 2] = static_cast<uint8_t>(v);
    }
  }
  return out;
}

GrayImage PdfDocument::render_page_gray(int index, double dpi) const {
  const poppler::image img = render_poppler(index, dpi, poppler::image::format_rgb24);
  GrayImage out(img.width(), img.height());
  for (int y = 0; y < out.height; ++y) {
    const auto* src = reinterpret_cast<const uint8_t*>(img.const_data()) + static_cast<size_t>(y) * img.bytes_per_row();
    pillow_luma(src, out.width, out.row(y));
  }
  return out;
}

}  // namespace folio
