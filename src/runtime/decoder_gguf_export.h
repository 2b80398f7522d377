// Writes a Hugging Face decoder checkpoint as the text-model GGUF llama.cpp reads (`folio convert`).
//
// Layout: llama.cpp's "deepseek2-ocr" architecture for Unlimited-OCR / DeepSeek-OCR decoders
// (deepseek_v2 without MLA): its metadata keys, its tensor names (blk.L.attn_q, ffn_gate_inp, the
// routed experts stacked in blk.L.ffn_{gate,up,down}_exps of shape [experts, out, in], the shared
// experts in ffn_*_shexp), the byte-level BPE vocabulary in tokenizer.ggml.*.
//
// Types, as llama.cpp's tools name them:
//   f32, f16, bf16  every matrix in that type; norms and the MoE router in f32 (as llama.cpp's
//                   converter keeps them).
//   q8_0, q4_k_m    llama-quantize's per-tensor choices for that file type: q8_0 everywhere; or
//                   q4_k with q6_k for output.weight and, on llama.cpp's "more bits" layers, for
//                   attn_v and every ffn_down; rows that do not fill 256-wide blocks fall back as
//                   llama.cpp's quantizer does (q4_k -> q5_0, q6_k -> q8_0). Norms and the router
//                   stay f32.
// The whole converted model is held in memory until written (about its size in the chosen type).
// Throws Error naming the tensor or setting at fault: an unknown type, an architecture other than
// deepseek_v2 (llama checkpoints: llama.cpp's own converter permutes their Q/K rows), a config
// llama.cpp cannot express (moe_layer_freq != 1), a tokenizer without a llama.cpp name.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "io/tensor_source.h"
#include "model/model_config.h"

namespace folio {

struct GgufExportSummary {
  std::map<DType, int64_t> tensors_by_type;  // how many tensors were written in each type
  uint64_t tensor_bytes = 0;                  // bytes of tensor data
};

// The accepted --type values, for help and error messages; and whether `type` is one.
const char* gguf_export_types();
bool is_gguf_export_type(const std::string& type);

GgufExportSummary write_decoder_gguf(const ModelConfig& config, const TensorSource& hf_weights,
                                     const nlohmann::json& tokenizer_json, const std::string& type,
                                     const std::string& out_path, const std::string& model_name);

}  // namespace folio
