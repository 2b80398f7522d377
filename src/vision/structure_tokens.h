// StructureTokens: the decoder inputs of folio-mini-ocr 2's structure decoder other than its own
// token table: line tokens and position codes. The C++ twin of StructureDecoder.line_tokens and
// .codes in tools/train/mini2/structure_model.py (tests/vision/structure_tokens_golden_test).
//
//   line token  = line_proj(numeric) + sum over slots s of char_embed[s * classes + chars[s]]
//                 (line_proj: Linear, exact GELU, Linear)
//   code        = type_embed[type] + page_embed[page mod max_pages] + line_embed[min(line, max_lines - 1)]
//
// A reference row is a line token plus its code (type Line), or a code alone (PageEnd, DocEnd); a
// generated token's row is the decoder's embedding of it plus the code (type Text) of the next line
// to label. Tensors (prefix "structure."): line_proj.{0,2}.{weight,bias}, char_embed.weight,
// type_embed.weight, page_embed.weight, line_embed.weight; shapes checked at construction
// (InvalidInput naming the tensor). Thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/tensor_source.h"
#include "vision/line_features.h"

namespace folio {

enum class StructureTokenType : int64_t { Line = 0, PageEnd = 1, DocEnd = 2, Text = 3 };

class StructureTokens {
 public:
  StructureTokens(const TensorSource& w, int64_t hidden, int64_t char_classes, const std::string& prefix = "structure.");

  // out[hidden] = the line token of f (no code).
  void line_token(const LineFeatures& f, float* out) const;
  // out[hidden] += the code of a token of this type at (page, line).
  void add_code(StructureTokenType type, int64_t page, int64_t line, float* out) const;

  int64_t hidden() const { return hidden_; }
  int64_t max_pages() const { return max_pages_; }
  int64_t max_lines() const { return max_lines_; }

 private:
  int64_t hidden_, classes_, max_pages_ = 0, max_lines_ = 0;
  std::vector<float> w0_, b0_, w1_, b1_;  // line_proj, row-major [out, in]
  std::vector<float> chars_, types_, pages_, lines_;
};

}  // namespace folio

namespace folio {

// Where the next line to label is, after each token the structure decoder writes: an action labels
// the current line (the next one is the line after it), the page token moves to the first line of
// the next page.
class StructureCursor {
 public:
  explicit StructureCursor(int32_t page_token) : page_token_(page_token) {}
  void advance(int32_t token) {
    if (token == page_token_) ++page_, line_ = 0;
    else ++line_;
  }
  int64_t page() const { return page_; }
  int64_t line() const { return line_; }

 private:
  int32_t page_token_;
  int64_t page_ = 0, line_ = 0;
};

}  // namespace folio
