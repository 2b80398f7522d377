// The figures of read pages as pictures, as the official Unlimited-OCR post-processing crops its
// image blocks: crop_figures cuts them out of the page (for the server and Python, which return
// them), OcrFigureFiles writes them as PNG files linked from the markdown (`folio ocr`).
//
// For each "image" block of a page (folio-mini-ocr's figures, Unlimited-OCR's image blocks) the
// block's first box is cropped from the page as rendered and named page-P-figure-K.png (P the page's
// 1-based number among the pages read, K the figure's on the page); the block's image_file becomes
// a link prefix + that name and its image_alt the caption next to it (the first block after it that
// is no figure, else the one before it, when that starts "Figure" / "Fig." and a number), else
// "Figure N" (N counting the document's figures so far).
#pragma once

#include <cstddef>
#include <string>

#include "doc/ocr_output.h"
#include "runtime/ocr_pages.h"

namespace folio {

struct OcrFigureCrop {
  std::string name;  // page-P-figure-K.png
  OcrBox box;        // page pixels
  RgbImage image;
};

// Whether the page has an image block with a box.
bool has_figures(const OcrPage& page);

// Page `index`'s figures cropped from `rendered` (the page as the model read it), in block order;
// their blocks' image_file = link_prefix + name and image_alt set. `numbered`: figures of the
// document before this page, advanced by this page's.
std::vector<OcrFigureCrop> crop_figures(const RgbImage& rendered, size_t index, OcrPage& page, const std::string& link_prefix,
                                        size_t& numbered);

// The figures of the pages `folio ocr` reads written into DIR, each page rendered again from its own
// OcrPages (the pipeline's renderer may be busy on another thread). DIR is created at the first
// figure: a document without figures writes nothing. IoError naming the file when one cannot be
// written. Not thread-safe: one writer per document, pages in order.
class OcrFigureFiles {
 public:
  // inputs, page_range, dpi: as the pipeline's OcrPages were opened.
  OcrFigureFiles(const std::vector<std::string>& inputs, const std::string& page_range, double dpi, std::string dir,
                 std::string link_prefix);

  // Writes page `index`'s figures and sets their blocks' image_file and image_alt.
  void write(size_t index, OcrPage& page);

  size_t written() const { return figures_; }

 private:
  OcrPages pages_;
  std::string dir_, link_prefix_;
  size_t figures_ = 0;
};

// The markdown's figure folder for `--out PATH`: PATH without its extension, then "_files".
std::string figure_dir_for(const std::string& markdown_path);

// A caption's first sentence when `text` starts as one ("Figure 3: ...", "Fig. 2. ..."), else "".
std::string figure_caption(const std::string& text);

}  // namespace folio
