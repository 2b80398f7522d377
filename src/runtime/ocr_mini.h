// MiniOcrModel: folio's own small OCR model (model_type "folio-mini-ocr", models/folio-mini-ocr) as an
// OcrModel.
//
// Promises, as tools/train/mini_ocr_model.py defines the model:
//  - each page is resized to the model's page size and read row by row by the front end
//    (mini_ocr_frontend.h); the reference of a pass is every page's visual tokens (mini_ocr_codes.h),
//    page after page, then <bos>; pages are numbered from 0 within a pass;
//  - generated tokens are fed back with the position code of the next character (the embed_token
//    hook), which is what lets the decoder find its place in the reference;
//  - greedy, no n-gram guard (the position codes already tie every character to a glyph), stops at
//    <eos>; the text it writes is rows ending in "\n" with "<page>" between pages.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vision/mini_ocr_codes.h"
#include "vision/mini_ocr_frontend.h"
#include "runtime/loaded_model.h"
#include "runtime/ocr_model.h"

namespace folio {

inline constexpr std::string_view kMiniPageMarker = "<page>";

class MiniOcrModel : public OcrModel {
 public:
  // dir: config.json ("folio-mini-ocr"), model.safetensors, tokenizer.json. InvalidInput naming the
  // missing or broken file or tensor.
  static std::unique_ptr<MiniOcrModel> load(const std::string& dir, const std::string& weights = "");

  std::string name() const override { return "folio-mini-ocr"; }
  // Its pages are image_width x image_height points (tools/train/synth.py writes one point per
  // pixel), so 72 dpi gives the model its pixels without resampling.
  double pdf_dpi() const override { return 72.0; }
  Decoder& decoder() override { return *model_.decoder; }
  const Tokenizer& tokenizer() const override { return *model_.tokenizer; }
  // An upper bound (every frame of every row emitting): the real count is known once a page is read.
  int64_t image_tokens(const OcrPages& pages, size_t i, VisionMode mode) const override;
  size_t max_pages_per_pass(VisionMode) const override { return SIZE_MAX; }
  // One token per frame of every row, a newline per row and a marker per page: more than the
  // model can read, so a run that never writes <eos> still ends.
  int64_t max_output_tokens(size_t count) override {
    return static_cast<int64_t>(count) * (cfg_.rows * (cfg_.frames_per_row() + 1) + 1);
  }
  // Reads the pass's pages one at a time (their visual tokens are small: hidden floats per glyph).
  OcrPass prepare(const OcrPages& pages, size_t first, size_t count, VisionMode mode, ThreadPool& threads,
                  const PageEncodedFn& on_encoded) override;
  // Pages enter and leave at each <page> the decoder writes; page codes wrap (page_code_period).
  bool can_roll() const override { return true; }
  OcrPass prepare_rolling(const OcrPages& pages, size_t first, size_t count, size_t resident, VisionMode mode,
                          ThreadPool& threads, const PageEncodedFn& on_encoded) override;
  // Splits at "<page>" (split_text_pages); each page is one text block (its rows, without the final newline).
  std::vector<OcrPage> parse(std::string_view text) const override;

  // The rows the front end reads on one page image (any size: it is resized to the model's).
  std::vector<MiniOcrRow> read_page(const RgbImage& page, ThreadPool& threads) const;

  const MiniOcrConfig& config() const { return cfg_; }

 private:
  MiniOcrModel() = default;
  // Page k of [first, first + count) read into a reference part of its visual tokens (the last page
  // of the pass ends with the document-end token).
  ReferencePart page_part(const OcrPages& pages, size_t first, size_t k, size_t count, ThreadPool& threads,
                          const PageEncodedFn& on_encoded) const;
  // Adds the <bos> part that closes the reference and the decoding recipe.
  void finish_pass(OcrPass& pass) const;
  // row[hidden] = the embedding of a text token + the code of `pos` (scratch: hidden floats).
  void embed_text(int32_t token, const MiniOcrPosition& pos, float* row, float* scratch) const;

  LoadedModel model_;
  MiniOcrConfig cfg_;
  std::unique_ptr<MiniOcrFrontEnd> front_;
  std::unique_ptr<MiniOcrCodes> codes_;
};

}  // namespace folio
