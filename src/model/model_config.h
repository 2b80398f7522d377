// ModelConfig: everything the decoder needs to know about an architecture, from config.json or GGUF.
//
// Two families share one decoder: `llama` (dense, GQA) and `deepseek_v2` without MLA (plain MHA;
// the first `first_k_dense` layers dense, then MoE with routed + shared experts), which is the
// Unlimited-OCR / DeepSeek-OCR language model. Unlimited-OCR's config.json nests the decoder under
// "language_config"; its top level also names the vision tower, which the decoder ignores.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kernels/cpu/ops.h"

namespace folio {

class GgufFile;

enum class Arch { Llama, DeepseekV2 };

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string model_type;  // as written in the checkpoint ("llama", "deepseek_v2", "unlimited-ocr", ...)
  int64_t hidden = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // dense MLP width
  int64_t vocab = 0;
  int64_t max_positions = 0;
  float rms_eps = 1e-6f;
  double rope_theta = 10000.0;
  kernels::RopeStyle rope_style = kernels::RopeStyle::RotateHalf;
  // false: no positional rotation at all (NoPE; config "position_encoding": "none"). folio's mini
  // OCR model locates its input with explicit position codes instead.
  bool rope = true;
  bool tie_embeddings = false;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int64_t sliding_window = 128;  // the model's R-SWA window (default when the checkpoint has none)

  // MoE (deepseek_v2). n_routed == 0 means every layer is dense.
  int64_t moe_intermediate = 0;
  int64_t n_routed = 0;
  int64_t n_shared = 0;
  int64_t top_k = 0;
  int64_t first_k_dense = 0;
  int64_t moe_layer_freq = 1;
  bool norm_topk_prob = false;
  float routed_scaling = 1.0f;

  bool is_moe_layer(int64_t layer) const {
    return n_routed > 0 && layer >= first_k_dense && layer % moe_layer_freq == 0;
  }
  // Checks internal consistency (positive sizes, heads divide, top-k <= experts); throws InvalidInput.
  void validate() const;

  static ModelConfig from_hf_json(const nlohmann::json& j);
  static ModelConfig from_hf_file(const std::string& config_json_path);
  static ModelConfig from_gguf(const GgufFile& g);
  nlohmann::json to_hf_json() const;
  std::string arch_name() const { return arch == Arch::Llama ? "llama" : "deepseek_v2"; }
};

}  // namespace folio
