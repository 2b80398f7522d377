// MiniOcrFrontEnd: the reading half of folio's mini OCR model. It cuts a page into its row bands,
// runs each band through a small CNN and a 1-D context stack into frames (one per 2 horizontal
// pixels at the default geometry), and reads each row with a CTC head (greedy path).
//
// Promises: the same numbers as tools/train/mini_ocr_model.py (FrontEnd + greedy_emissions), up to
// float rounding; frames where the greedy path emits a character are what the decoder gets as visual
// tokens (MiniOcrCodes). Work per page is bounded: one band's activations at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/tensor_source.h"
#include "kernels/cpu/conv2d.h"
#include "vision/mini_ocr_config.h"

namespace folio {

struct MiniOcrRow {
  std::vector<float> frames;        // [frames_per_row, frame_hidden]
  std::vector<int32_t> emit_frame;  // frames where the greedy CTC path emits (first frame of each run)
  std::vector<int32_t> emit_label;  // their CTC classes (1.. = printable ASCII from ' ')
  std::string text() const;         // the row as CTC reads it
};

class MiniOcrFrontEnd {
 public:
  // Shape-checks every mini_ocr.* front-end tensor; throws InvalidInput naming a missing one.
  MiniOcrFrontEnd(const MiniOcrConfig& cfg, const TensorSource& weights);

  // gray: image_height x image_width pixels in [0, 1], row-major (the page already at model size).
  std::vector<MiniOcrRow> read_page(const float* gray, ThreadPool& pool) const;

  // One band: pitch x width pixels, already normalised. Also returns the CTC logits if asked.
  MiniOcrRow read_band(const float* band, ThreadPool& pool, std::vector<float>* ctc_logits = nullptr) const;

  const MiniOcrConfig& config() const { return cfg_; }

 private:
  MiniOcrConfig cfg_;
  std::vector<kernels::ConvFilter> conv_;
  std::vector<std::vector<float>> conv_b_;
  const TensorView* proj_w_ = nullptr;
  std::vector<float> proj_b_, proj_norm_w_, proj_norm_b_;
  std::vector<const TensorView*> ctx_w_;
  std::vector<std::vector<float>> ctx_b_;
  std::vector<float> norm_w_, norm_b_;
  const TensorView* ctc_w_ = nullptr;
  std::vector<float> ctc_b_;
};

}  // namespace folio
