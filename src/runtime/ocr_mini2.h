// MiniOcr2Model: folio-mini-ocr 2 (model_type "folio-mini-ocr-2", models/folio-mini-ocr-2) as an
// OcrModel: it reads born-digital pages of any size.
//
// Promises, as tools/train/mini2 defines the model:
//  - a page (a PDF rendered at the model's pdf_dpi, or an image at its own size) is deskewed
//    (deskew.h: tilts up to 3 degrees), laid out
//    (page_layout.h: rules removed, columns, lines in reading order, segments) and every segment is
//    read by the line recognizer (greedy CTC);
//  - the reference of a pass is, page after page, one token per line (line_features.h and
//    structure_tokens.h) and a page-end token (document-end after the pass's last page), then <bos>;
//  - the decoder writes one action per line and <page> between pages, constrained to do exactly
//    that (an action while lines remain, then <page>, or <eos> after the last page), so no line is
//    lost or written twice; each action goes back in with the code of the next line;
//  - a heading's level is settled across the pass (heading_levels.h): a heading that looks like an
//    earlier one gets its level, and no level is skipped;
//  - the text is the lines' readings arranged by the actions (StructureWriter): markdown with
//    headings, paragraphs, lists, code and tables; "<page>" between pages;
//  - figures (figure_finder.h) are found before the layout and left out of it (their labels are no
//    lines); each is written as the image block "<!-- image [x0, y0, x1, y1] -->" (its box
//    normalised to 0..999, as Unlimited-OCR's) before the first line below its top that it stands
//    over (or below its bottom, in a column as wide as it), or after the page's last line.
// Threads: besides the pool, prepare and prepare_rolling analyse the next page (render, deskew,
// layout) on a thread of their own while the pool reads the current page's lines; they render one
// page at a time, so OcrPages' one-renderer rule holds as long as nothing else renders the same
// pages meanwhile.
// The pass's decoding state lives in its hooks (constrain and embed_token on the decoding thread,
// write_token wherever the tokens become text, each with its own cursor): one sequence per pass;
// fresh_decoding gives another.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include "vision/figure_finder.h"
#include "vision/line_features.h"
#include "vision/line_recognizer.h"
#include "vision/page_layout.h"
#include "vision/structure_tokens.h"
#include "runtime/contents_lines.h"
#include "runtime/loaded_model.h"
#include "runtime/ocr_model.h"
#include "runtime/structure_writer.h"

namespace folio {

inline constexpr std::string_view kMini2PageMarker = "<page>";

// A figure of a page (figure_finder.h): its box, and where it stands among the page's lines.
struct Mini2Figure {
  FigureBox box;           // page pixels
  size_t before_line = 0;  // the index of the first line it comes before (== lines: after them all)
};

// One page as the model reads it.
struct Mini2Page {
  int width = 0, height = 0;
  std::vector<ReadLine> lines;  // reading order
  std::vector<Mini2Figure> figures;  // by before_line
};

class MiniOcr2Model : public OcrModel {
 public:
  // Most lines one page may give the decoder; the lines after them (only a page of noise has more)
  // are not read. Bounds the reference a page takes before it is read.
  static constexpr int64_t kMaxLinesPerPage = 400;

  // dir: config.json ("folio-mini-ocr-2"), model.safetensors, tokenizer.json. InvalidInput naming the
  // missing or broken file, key or tensor.
  static std::unique_ptr<MiniOcr2Model> load(const std::string& dir, const std::string& weights = "");

  // The config's model_type: folio-mini-ocr-2, or a later model in its format (folio-mini-ocr-3).
  std::string name() const override { return name_; }
  double pdf_dpi() const override { return pdf_dpi_; }
  Decoder& decoder() override { return *model_.decoder; }
  const Tokenizer& tokenizer() const override { return *model_.tokenizer; }
  int64_t image_tokens(const OcrPages&, size_t, VisionMode) const override { return kMaxLinesPerPage + 1; }
  // Pages that share a page code (codes repeat every max_pages pages) are never in one pass, as
  // rolling never keeps them resident together: at most max_pages - 1 pages per pass.
  size_t max_pages_per_pass(VisionMode) const override { return static_cast<size_t>(tokens_->max_pages() - 1); }
  int64_t max_output_tokens(size_t count) override { return static_cast<int64_t>(count) * (kMaxLinesPerPage + 1) + 1; }
  OcrPass prepare(const OcrPages& pages, size_t first, size_t count, VisionMode mode, ThreadPool& threads,
                  const PageEncodedFn& on_encoded) override;
  bool can_roll() const override { return true; }
  OcrPass prepare_rolling(const OcrPages& pages, size_t first, size_t count, size_t resident, VisionMode mode,
                          ThreadPool& threads, const PageEncodedFn& on_encoded) override;
  // The prepared pass with its own decoding state (cursors, markdown writer), the pages' readings
  // shared: for one more sequence over the same pages (the server reuses prepared passes).
  OcrPass fresh_decoding(const OcrPass& prepared) const override;
  // Splits at "<page>"; each page's markdown into labelled blocks (doc/markdown_blocks.h).
  std::vector<OcrPage> parse(std::string_view text) const override;

  // Lays out and reads one page image.
  Mini2Page read_page(const RgbImage& page, ThreadPool& threads) const;

 private:
  struct PassState;
  // A page rendered, deskewed and laid out: one thread's work, done for the next page while the
  // pool reads the lines of the one before (PageAhead in the .cpp).
  struct PageAnalysis {
    int width = 0, height = 0;
    PageLayout layout;               // of the page without its figures
    std::vector<Mini2Figure> figures;
    double ms = 0;  // its time
  };
  class PageAhead;
  MiniOcr2Model() = default;
  // `pool`: threads for the skew search, or null.
  PageAnalysis analyse_page(GrayImage page, ThreadPool* pool) const;
  Mini2Page read_lines(const PageAnalysis& page, ThreadPool& threads) const;
  ReferencePart page_part(const PageAnalysis& analysis, size_t first, size_t k, size_t count, ThreadPool& threads,
                          const PageEncodedFn& on_encoded, PassState& state) const;
  void finish_pass(OcrPass& pass, std::shared_ptr<PassState> state) const;
  void bind_hooks(OcrPass& pass, std::shared_ptr<PassState> state) const;
  // The image blocks of `page`'s figures that stand before line `before_line` and were not written.
  static std::string write_figures(PassState& state, size_t page, size_t before_line);
  // Heading levels settled per pass (heading_levels.h), on the decoding thread.
  const LineStyle* cursor_style(const PassState& state) const;  // the style of the line being decided
  std::optional<int> heading_level(int32_t token) const;        // 1-3 for H1-H3
  void keep_prose_out_of_code(const PassState& state, std::span<float> logits) const;
  // What the line at (page, line) of the pass writes by the contents rule, or null (contents_lines.h).
  const std::vector<ContentsWrite>* contents_writes_at(const PassState& state, std::pair<size_t, size_t> at) const;
  void keep_only(StructureAction action, std::span<float> logits) const;
  void settle_heading_level(const PassState& state, std::span<float> logits) const;
  void note_heading(PassState& state, int32_t token) const;

  LoadedModel model_;
  double pdf_dpi_ = 150;
  std::string name_ = "folio-mini-ocr-2";
  std::unique_ptr<LineRecognizer> recognizer_;
  std::unique_ptr<CharClasses> classes_;
  std::unique_ptr<StructureTokens> tokens_;
  std::vector<std::optional<StructureAction>> action_of_token_;  // decoder token -> action
  std::array<int32_t, kStructureActions> token_of_action_{};  // action -> decoder token, -1 if none
  int32_t page_token_ = -1;
};

}  // namespace folio
