// The tensors a decoder config implies: their names (Hugging Face or GGUF spelling) and shapes.
//
// The one place that knows checkpoint naming, used by the Decoder to find its weights and by
// make-model to write checkpoints the Decoder (and other tools) can read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace folio {

enum class WeightNaming { HuggingFace, Gguf };

// what: "embed", "norm", "lm_head".
std::string global_tensor_name(WeightNaming n, const std::string& what);
// what: the Hugging Face module path inside a layer, e.g. "self_attn.q_proj", "mlp.experts.3.up_proj".
std::string layer_tensor_name(WeightNaming n, int64_t layer, const std::string& what);

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool is_norm = false;  // RMSNorm weight (initialised to ~1 in random checkpoints)
};

// Every tensor of the decoder, in checkpoint order.
std::vector<TensorSpec> decoder_tensor_specs(const ModelConfig& cfg, WeightNaming n);

}  // namespace folio
