// LineRecognizer: folio-mini-ocr 2's reader of one text line (tools/train/mini2/recognizer.py),
// with batch norm already folded into its convolutions by export_recognizer.py.
//
//   crop [32, W] ink in [0, 1] (W a multiple of 4)
//   -> conv3x3 + ReLU, max-pool 2x2 -> conv3x3 + ReLU, max-pool 2x2 -> conv3x3 + ReLU, max-pool (2,1)
//   -> conv3x3 + ReLU -> per frame (W / 4 of them) its 4 rows x C channels -> proj + ReLU
//   -> blocks x [x + ReLU(conv1d k=3)] -> head: logits over blank + the charset
//
// Promises: the logits torch computes from the same tensors (tests/vision/line_recognizer_golden_test),
// up to float rounding; the same bits whatever the pool (a line always runs on one thread). One
// line's activations per thread at a time. Widths (frame width, channels, blocks, classes) come from
// the tensor shapes. Thread-safe for concurrent reads after construction.
//
// Precision: F32 computes in f32 (the golden test's mode). Int8 (the default) runs every layer as
// kernels::gemm_int8: weights in 8 bits per output channel, each layer's input (the crop's ink and
// ReLU outputs, >= 0) in 7 bits with one scale per line and layer, exact integer sums. Int8 logits
// differ from f32's by the quantisation (tests/vision/line_recognizer_int8_test bounds it) and are
// the same bits on every ISA.
//
// Speed: the convolutions' weights are re-laid out at load as [out, ky, kx, in], and the conv1d
// blocks' as [out, tap, in], so that F32's im2col copies whole channel runs of the HWC map and
// Int8 reads the same runs in place through tap offsets. A line's layers
// are too narrow (16-128 output channels) to split across threads, so many lines run side by side
// instead (read_many).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/int8_gemm.h"
#include "io/tensor_source.h"
#include "vision/line_crop.h"

namespace folio {

class LineRecognizer {
 public:
  static constexpr int64_t kHeight = 32;       // crop rows
  static constexpr int64_t kFrameStride = 4;   // crop columns per frame

  enum class Precision { F32, Int8 };

  // Tensors conv0..3, proj, block0.., head (weights any float dtype; biases read as f32), each
  // name prefixed by `prefix`. `charset`: the UTF-8 text whose k-th character is class k + 1.
  // Throws InvalidInput naming a missing or mis-shaped tensor, or a charset whose size does not
  // match the head. Int8 needs every layer's input width after conv0 (9 x channels, proj's, the
  // blocks' 3 x width, the head's) to be a multiple of 4; where one is not, the recognizer runs F32.
  LineRecognizer(const TensorSource& weights, const std::string& charset, const std::string& prefix = "",
                 Precision precision = Precision::Int8);

  // [width / 4, classes()] logits of one crop (kHeight x width, row-major), computed on the calling
  // thread (the pool is not used: see read_many). InvalidInput if width is not a positive multiple of 4.
  std::vector<float> logits(const float* crop, int64_t width, ThreadPool& pool) const;
  // The greedy CTC reading of a crop: the argmax class per frame, repeats merged, blanks dropped.
  std::string read(const float* crop, int64_t width, ThreadPool& pool) const;
  // The same from logits already computed ([frames, classes()]).
  std::string greedy_text(const std::vector<float>& logits) const;
  // read() of every crop, the crops spread over the pool's threads (widest first). out[i] reads crops[i].
  std::vector<std::string> read_many(const std::vector<const LineCrop*>& crops, ThreadPool& pool) const;

  int64_t classes() const { return head_w_->shape[0]; }
  Precision precision() const { return int8_.empty() ? Precision::F32 : Precision::Int8; }

 private:
  // A weight re-laid out in f32, [rows, cols].
  struct OwnedWeight {
    std::string name;
    int64_t rows = 0, cols = 0;
    std::vector<float> values;
    TensorView view() const { return TensorView{name, DType::F32, {rows, cols}, values.data()}; }
  };
  // One line's logits with every matmul on `serial` (a pool of one thread).
  std::vector<float> run(const float* crop, int64_t width, ThreadPool& serial) const;
  void quantize_layers();
  // run() in Int8 precision.
  std::vector<float> run_int8(const float* crop, int64_t width) const;

  std::vector<OwnedWeight> conv_w_;   // [out, 9 * in], columns (ky, kx, in)
  std::vector<std::vector<float>> conv_b_;
  const TensorView* proj_w_ = nullptr;
  std::vector<float> proj_b_;
  std::vector<OwnedWeight> block_w_;  // [d, 3 * d], columns (tap, in)
  std::vector<std::vector<float>> block_b_;
  const TensorView* head_w_ = nullptr;
  std::vector<float> head_b_;
  std::vector<std::string> glyphs_;  // class k + 1 -> its UTF-8 character
  // Int8 precision: conv0.., proj, block0.., head in that order; empty for F32.
  std::vector<kernels::Int8Weights> int8_;
};

}  // namespace folio
