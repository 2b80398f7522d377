// LineRecognizer: folio-mini-ocr 2's reader of one text line (tools/train/mini2/recognizer.py),
// with batch norm already folded into its convolutions by export_recognizer.py.
//
//   crop [32, W] ink in [0, 1] (W a multiple of 4)
//   -> conv3x3 + ReLU, max-pool 2x2 -> conv3x3 + ReLU, max-pool 2x2 -> conv3x3 + ReLU, max-pool (2,1)
//   -> conv3x3 + ReLU -> per frame (W / 4 of them) its 4 rows x C channels -> proj + ReLU
//   -> blocks x [x + ReLU(conv1d k=3)] -> head: logits over blank + the charset
//
// Promises: the logits torch computes from the same tensors (tests/vision/line_recognizer_golden_test),
// up to float rounding; one line's activations at a time. Widths (frame width, channels, blocks,
// classes) come from the tensor shapes. Thread-safe for concurrent reads after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/io/tensor_source.h"

namespace folio {

class LineRecognizer {
 public:
  static constexpr int64_t kHeight = 32;       // crop rows
  static constexpr int64_t kFrameStride = 4;   // crop columns per frame

  // Tensors conv0..3, proj, block0.., head (weights any float dtype; biases read as f32), each
  // name prefixed by `prefix`. `charset`: the UTF-8 text whose k-th character is class k + 1.
  // Throws InvalidInput naming a missing or mis-shaped tensor, or a charset whose size does not
  // match the head.
  LineRecognizer(const TensorSource& weights, const std::string& charset, const std::string& prefix = "");

  // [width / 4, classes()] logits of one crop (kHeight x width, row-major). InvalidInput if width is
  // not a positive multiple of 4.
  std::vector<float> logits(const float* crop, int64_t width, ThreadPool& pool) const;
  // The greedy CTC reading of a crop: the argmax class per frame, repeats merged, blanks dropped.
  std::string read(const float* crop, int64_t width, ThreadPool& pool) const;
  // The same from logits already computed ([frames, classes()]).
  std::string greedy_text(const std::vector<float>& logits) const;

  int64_t classes() const { return head_w_->shape[0]; }

 private:
  std::vector<const TensorView*> conv_w_;
  std::vector<std::vector<float>> conv_b_;
  const TensorView* proj_w_ = nullptr;
  std::vector<float> proj_b_;
  std::vector<const TensorView*> block_w_;
  std::vector<std::vector<float>> block_b_;
  const TensorView* head_w_ = nullptr;
  std::vector<float> head_b_;
  std::vector<std::string> glyphs_;  // class k + 1 -> its UTF-8 character
};

}  // namespace folio
