// MiniOcrCodes: the position codes that let folio's mini OCR decoder find the next glyph to read.
//
// Every decoder input of the mini model carries a code: the sum of learned embeddings of its type
// (character, row end, page end, document end, text), page, row and character number. Visual tokens carry the position of the glyph they read; each text token
// carries the position of the NEXT character to write, so reading is a match of codes in attention.
// Mirrors tools/train/mini_ocr_model.py (Codes, reference_layout, text_codes) exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "io/tensor_source.h"
#include "vision/mini_ocr_config.h"
#include "vision/mini_ocr_frontend.h"

namespace folio {

enum class MiniOcrTokenType : int64_t { Char = 0, RowEnd = 1, PageEnd = 2, DocEnd = 3, Text = 4 };

struct MiniOcrPosition {
  int64_t page = 0;
  int64_t row = 0;
  int64_t ch = 0;  // character number within the row
};

// Special token ids of the mini model's byte vocabulary (ids 0-255 are bytes).
inline constexpr int32_t kMiniBos = 256, kMiniEos = 257, kMiniPage = 258, kMiniNewline = 10;

// Where the next character goes after each generated token: "\n" starts the next row, <page> the
// next page, anything else the next character of the row.
class MiniOcrCursor {
 public:
  explicit MiniOcrCursor(int64_t first_page = 0) { pos_.page = first_page; }
  const MiniOcrPosition& position() const { return pos_; }
  void advance(int32_t token);

 private:
  MiniOcrPosition pos_;
};

class MiniOcrCodes {
 public:
  MiniOcrCodes(const MiniOcrConfig& cfg, const TensorSource& weights);

  // out[hidden] = the code of a token of this type at this position (row and character numbers past
  // the tables use their last entry; page numbers wrap every page_code_period pages).
  void code(MiniOcrTokenType type, const MiniOcrPosition& pos, float* out) const;
  // out[hidden] += visual_proj(frame)
  void add_visual(const float* frame, float* out) const;

  // Appends the visual tokens of one page ([n, hidden] rows) to `out`: the page keeps its rows up to
  // the last one where CTC emits; each kept row gives its characters then a row-end token; the page
  // ends with a page-end token, or a document-end token when `last`. Returns the tokens appended.
  // When row_starts is given, the index (within the page's tokens) of each kept row's first token is
  // appended to it.
  int64_t append_page(const std::vector<MiniOcrRow>& rows, int64_t page, bool last, std::vector<float>& out,
                      std::vector<int64_t>* row_starts = nullptr) const;

  int64_t hidden() const { return cfg_.hidden; }

 private:
  MiniOcrConfig cfg_;
  const TensorView* visual_w_ = nullptr;
  std::vector<float> visual_b_, type_, page_, row_, char_;
};

}  // namespace folio
