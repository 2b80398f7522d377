// MiniOcrConfig: the sizes of folio's own small OCR model (model_type "folio-mini-ocr"), read from
// the "vision_config" section of its config.json. Its decoder is a llama-style model described by
// "text_config" (ModelConfig reads that part).
//
// The page geometry is part of the model: it reads a page of image_width x image_height pixels as
// `rows` bands of line_pitch pixels starting at margin_top, which is how its training pages were laid
// out (tools/train/synth.py).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace folio {

struct MiniOcrConfig {
  int64_t image_width = 448;
  int64_t image_height = 352;
  int64_t margin_top = 16;
  int64_t line_pitch = 32;
  int64_t rows = 10;
  float pixel_mean = 0.5f;
  float pixel_std = 0.5f;
  std::vector<int64_t> conv_channels = {16, 32, 48, 64};
  std::vector<std::array<int64_t, 2>> conv_strides = {{2, 1}, {2, 2}, {2, 1}, {1, 1}};  // (vertical, horizontal)
  int64_t frame_hidden = 128;
  int64_t context_layers = 2;
  int64_t context_kernel = 5;
  int64_t ctc_vocab = 96;   // blank + printable ASCII (32..126)
  int64_t max_rows = 16;    // position-code table sizes
  int64_t max_chars = 256;
  int64_t max_pages = 256;
  // Page numbers wrap around every page_code_period pages: the trainer saw page codes 0-203 (random
  // offsets up to 200), so documents longer than that reuse codes. Pages that share a code are never
  // in one reference together under the rolling policy (it keeps a few pages resident).
  int64_t page_code_period = 200;
  int64_t hidden = 128;     // the decoder's width (codes are added to its input embeddings)

  // Height and width of the last convolution's output for one band.
  int64_t band_out_height() const;
  int64_t frames_per_row() const;

  // Positive sizes, odd context kernel, bands inside the page; throws InvalidInput naming the key.
  void validate() const;

  static MiniOcrConfig from_hf_json(const nlohmann::json& root);
};

}  // namespace folio
