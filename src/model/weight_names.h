// The tensors a decoder config implies: their names (Hugging Face or GGUF spelling) and shapes.
//
// The one place that knows checkpoint naming, used by the Decoder to find its weights and by
// make-model to write checkpoints the Decoder (and other tools) can read.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace folio {

enum class WeightNaming { HuggingFace, Gguf };

// what: "embed", "norm", "lm_head".
std::string global_tensor_name(WeightNaming n, const std::string& what);
// what: the Hugging Face module path inside a layer, e.g. "self_attn.q_proj", "mlp.experts.3.up_proj".
// GGUF (llama.cpp's deepseek2 layout) stores a layer's routed experts stacked in one
// [n_experts, out, in] tensor, "blk.L.ffn_up_exps.weight"; expert e of it is named
// "blk.L.ffn_up_exps.weight[e]" (an ExpertSliceSource serves such names).
std::string layer_tensor_name(WeightNaming n, int64_t layer, const std::string& what);

// "blk.1.ffn_up_exps.weight[3]" -> {"blk.1.ffn_up_exps.weight", 3}; nullopt for any other name.
std::optional<std::pair<std::string, int64_t>> parse_expert_slice_name(std::string_view name);
std::string expert_slice_name(const std::string& stacked, int64_t expert);

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool is_norm = false;  // RMSNorm weight (initialised to ~1 in random checkpoints)
};

// Every tensor of the decoder, in checkpoint order.
std::vector<TensorSpec> decoder_tensor_specs(const ModelConfig& cfg, WeightNaming n);

}  // namespace folio
