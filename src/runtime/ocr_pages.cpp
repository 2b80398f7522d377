#include "runtime/ocr_pages.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "doc/gray_page.h"
#include "doc/page_range.h"
#include "doc/page_source.h"

namespace folio {

namespace fs = std::filesystem;

std::vector<std::string> expand_ocr_input(const std::string& input) {
  std::error_code ec;
  if (!fs::exists(input, ec)) throw_invalid("input '" + input + "' does not exist");
  if (!fs::is_directory(input, ec)) return {input};
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(input, ec)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".png" || ext == ".jpg" || ext == ".jpeg") files.push_back(e.path().string());
  }
  if (ec) throw_invalid("cannot list directory '" + input + "': " + ec.message());
  if (files.empty()) throw_invalid("directory '" + input + "' has no .png, .jpg or .jpeg images");
  std::sort(files.begin(), files.end());
  return files;
}

OcrPages OcrPages::open(const std::vector<std::string>& inputs, std::string_view page_range, double pdf_dpi) {
  if (inputs.empty()) throw_invalid("no input files: give at least one PDF, image or directory of images");
  std::vector<OcrPageRef> all;
  std::vector<std::shared_ptr<PdfDocument>> all_docs;
  // A file named several times is opened once (its pages repeat, its document does not).
  std::map<std::string, std::shared_ptr<PdfDocument>> opened;
  for (const std::string& input : inputs) {
    for (const std::string& file : expand_ocr_input(input)) {
      if (looks_like_pdf(file)) {
        std::shared_ptr<PdfDocument>& doc = opened[file];
        if (!doc) doc = std::make_shared<PdfDocument>(PdfDocument::open(file));
        for (int p = 0; p < doc->page_count(); ++p) {
          // Sized (and checked against the image limits) without rendering.
          auto [w, h] = doc->page_pixel_size(p, pdf_dpi);
          check_image_size(w, h, "page " + std::to_string(p + 1) + " of PDF '" + file + "' at " +
                                     std::to_string(static_cast<int>(pdf_dpi)) + " DPI");
          all.push_back({file, true, p, static_cast<int>(all.size()) + 1, w, h});
          all_docs.push_back(doc);
        }
      } else {
        // Decoded once to check it (load_image refuses a bad size from the header first), then
        // dropped: render() decodes it again when its turn comes.
        RgbImage img = load_image(file);
        all.push_back({file, false, 0, static_cast<int>(all.size()) + 1, img.width, img.height});
        all_docs.push_back(nullptr);
      }
    }
  }
  OcrPages out;
  out.dpi_ = pdf_dpi;
  const int total = static_cast<int>(all.size());
  const std::vector<int> picked = page_range.empty() ? all_pages(total) : parse_page_range(page_range, total);
  for (int i : picked) {
    out.pages_.push_back(all[static_cast<size_t>(i)]);
    out.docs_.push_back(all_docs[static_cast<size_t>(i)]);
  }
  return out;
}

std::vector<PageSize> OcrPages::sizes() const {
  std::vector<PageSize> s;
  for (const OcrPageRef& p : pages_) s.push_back({p.width, p.height});
  return s;
}

std::string OcrPages::describe(size_t i) const {
  const OcrPageRef& p = page(i);
  return p.pdf ? "page " + std::to_string(p.index + 1) + " of '" + p.file + "'" : "'" + p.file + "'";
}

namespace {

// `describe` names the page, called only for the error.
template <class Image, class Describe>
Image checked_size(Image img, const OcrPageRef& p, const Describe& describe) {
  if (img.width != p.width || img.height != p.height)
    throw Error(Error::Kind::Io, describe() + " changed size since it was opened (" + std::to_string(p.width) + "x" +
                                     std::to_string(p.height) + " -> " + std::to_string(img.width) + "x" +
                                     std::to_string(img.height) + ")");
  return img;
}

}  // namespace

RgbImage OcrPages::render(size_t i) const {
  const OcrPageRef& p = page(i);
  return checked_size(p.pdf ? docs_[i]->render_page(p.index, dpi_) : load_image(p.file), p, [&] { return describe(i); });
}

GrayImage OcrPages::render_gray(size_t i) const {
  const OcrPageRef& p = page(i);
  return checked_size(p.pdf ? docs_[i]->render_page_gray(p.index, dpi_) : gray_image(load_image(p.file)), p,
                      [&] { return describe(i); });
}

}  // namespace folio
