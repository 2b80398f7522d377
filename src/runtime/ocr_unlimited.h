// UnlimitedOcrModel: Unlimited-OCR / DeepSeek-OCR (DeepEncoder + DeepSeek-V2 MoE decoder) as an
// OcrModel.
//
// Promises, as the official code runs it (modeling_unlimitedocr.py infer / infer_multi and its
// README recipe):
//  - one page: prompt "<image>document parsing.", Base (1024 global view) or Gundam (global view +
//    640 tiles when a side exceeds 640); several pages: "<image>Multi page parsing." with every
//    page's Base image tokens at the single <image>, page after page (Gundam is single-page only);
//  - reference = [BOS + text before <image>] [page 1 rows] ... [page n rows] [text after <image>],
//    image positions holding the "<image>" token id (128815 in the published vocabulary) for the
//    n-gram guard;
//  - n-gram guard n = 35 over the last 128 tokens for one page, 1024 for several; greedy; stops
//    at EOS;
//  - pages are rendered, preprocessed and encoded one at a time, when prefill reaches them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vision/deep_encoder.h"
#include "runtime/loaded_model.h"
#include "runtime/ocr_model.h"

namespace folio {

inline constexpr int kUnlimitedOcrNgram = 35;
inline constexpr int kUnlimitedOcrNgramWindowSingle = 128;
inline constexpr int kUnlimitedOcrNgramWindowMulti = 1024;

class UnlimitedOcrModel : public OcrModel {
 public:
  // dir: config.json (published layout, with vision_config) + model.safetensors (decoder and vision
  // tensors) + tokenizer.json. InvalidInput naming the missing or broken file or tensor.
  static std::unique_ptr<UnlimitedOcrModel> load(const std::string& dir, const std::string& weights = "");
  // The GGUF files llama.cpp users hold: the text model (deepseek2-ocr) and its mmproj (the vision
  // tower, vision/mmproj.h). InvalidInput when the projector's width differs from the text
  // model's hidden size, naming both files.
  static std::unique_ptr<UnlimitedOcrModel> load_gguf(const std::string& text_gguf, const std::string& mmproj,
                                                      const std::string& weights = "");

  std::string name() const override { return "unlimited-ocr"; }
  Decoder& decoder() override { return *model_.decoder; }
  const Tokenizer& tokenizer() const override { return *model_.tokenizer; }
  int64_t image_tokens(const OcrPages& pages, size_t i, VisionMode mode) const override;
  size_t max_pages_per_pass(VisionMode mode) const override { return mode == VisionMode::Gundam ? 1 : SIZE_MAX; }
  OcrPass prepare(const OcrPages& pages, size_t first, size_t count, VisionMode mode, ThreadPool& threads,
                  const PageEncodedFn& on_encoded) override;

  // Image tokens of a width x height page under `mode`.
  int64_t image_tokens(int width, int height, VisionMode mode) const;
  // One page's image embedding rows [image_tokens, hidden] (preprocess, encode every view, assemble).
  std::vector<float> encode_page(const RgbImage& page, VisionMode mode, ThreadPool& threads) const;

  const DeepEncoder& encoder() const { return *encoder_; }
  // DeepEncoder::set_precision; F32 until set.
  bool set_encoder_precision(kernels::GemmPrecision p) override {
    encoder_->set_precision(p);
    return true;
  }
  const char* encoder_precision() const override;
  bool set_prefill_precision(kernels::GemmPrecision p) override {
    model_.decoder->set_prefill_precision(p);
    return true;
  }
  const char* prefill_precision() const override;
  const LoadedModel& loaded() const { return model_; }

 private:
  UnlimitedOcrModel() = default;

  // Checks the decoder against the tower and builds the encoder over `vision`'s tensors.
  void attach_encoder(const VisionConfig& vcfg, const TensorSource& vision, const std::string& where);

  LoadedModel model_;
  std::unique_ptr<TensorSource> mmproj_;  // the vision tensors when they come from an mmproj file
  std::unique_ptr<DeepEncoder> encoder_;
  int64_t global_side_ = 0, tile_side_ = 0;  // encoder output grid of a 1024 view / a 640 tile
};

}  // namespace folio
