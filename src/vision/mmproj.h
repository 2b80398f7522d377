// The DeepEncoder in llama.cpp's "mmproj" GGUF (projector type "deepseekocr"): the file llama.cpp's
// converter writes beside the text model for DeepSeek-OCR / Unlimited-OCR, and `folio convert
// --mmproj-out` writes.
//
// Layout (llama.cpp's names; every tensor as the Hugging Face checkpoint holds it, no transposes):
// SAM under v.sam.* (patch_embd, pos_embd.weight, blk.N.{pre_ln, post_ln, attn.qkv, attn.out,
// attn.pos_h.weight, attn.pos_w.weight, mlp.lin1, mlp.lin2}, neck.0-3, net_2, net_3), CLIP under
// v.* (class_embd, patch_embd, position_embd, pre_ln, blk.N.{attn_qkv, attn_out, ln1, ln2, ffn_up,
// ffn_down}), the projector as mm.model.fc, and v.image_newline / v.view_seperator (the latter
// [1, n_embed]). Metadata: clip.projector_type "deepseekocr", clip.vision.* and clip.vision.sam.*.
//
// MmprojSource serves such a file under the Hugging Face names, so DeepEncoder loads from it as from
// the published safetensors. Sizes the metadata does not carry (or that llama.cpp's converter writes
// wrongly, such as feed_forward_length) come from the tensors' shapes; a SAM block is global when its
// relative-position table spans the whole grid rather than a window.
// Failures throw Error(InvalidInput) naming the file and the key or tensor at fault.
#pragma once

#include <memory>
#include <string>

#include "core/dtype.h"
#include "io/gguf.h"
#include "io/tensor_source.h"
#include "vision/vision_config.h"

namespace folio {

// The mmproj name of a Hugging Face DeepEncoder tensor ("model.sam_model.blocks.3.attn.qkv.weight"
// -> "v.sam.blk.3.attn.qkv.weight"), or "" if it is not one; and the inverse.
std::string mmproj_tensor_name(const std::string& hf_name);
std::string hf_vision_tensor_name(const std::string& mmproj_name);

// Its tensors are the file's views, keyed by their Hugging Face names.
class MmprojSource : public TensorMapSource {
 public:
  static std::unique_ptr<MmprojSource> open(const std::string& path);

  const VisionConfig& config() const { return config_; }
  std::string description() const override { return file_->description(); }

 private:
  MmprojSource() = default;

  std::unique_ptr<GgufFile> file_;
  VisionConfig config_;
};

// Writes the DeepEncoder tensors of `hf` (Hugging Face names) as an mmproj file. Matrices are stored
// as `matrices` (f32, f16 or bf16); embeddings, position tables, the neck and downsampling
// convolutions, norms and biases stay f32, as llama.cpp's converter keeps them (the SAM patch
// embedding too: an f16 one would make llama.cpp run its first convolution in f16).
void write_mmproj_gguf(const VisionConfig& config, const TensorSource& hf, DType matrices, const std::string& path,
                       const std::string& model_name);

}  // namespace folio
