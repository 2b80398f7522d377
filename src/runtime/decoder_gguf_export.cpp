#include "runtime/decoder_gguf_export.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/gguf.h"
#include "model/quantized_weights.h"
#include "model/weight_names.h"
#include "text/gguf_vocab.h"

namespace folio {

namespace {

struct ExportType {
  DType floats = DType::F32;            // matrices, for f32 / f16 / bf16
  std::optional<WeightScheme> scheme;   // quantised file types
};

ExportType parse_export_type(const std::string& type) {
  if (type == "f32") return {DType::F32, std::nullopt};
  if (type == "f16") return {DType::F16, std::nullopt};
  if (type == "bf16") return {DType::BF16, std::nullopt};
  if (type == "q8_0" || type == "q4_k_m") return {DType::F32, parse_weight_scheme(type)};
  throw_invalid("--type: unknown GGUF type '" + type + "' (one of " + gguf_export_types() + ")");
}

// The role of a Hugging Face decoder tensor name: "embed", "lm_head", "norm" or the module path
// inside its layer ("self_attn.q_proj", "mlp.experts.3.down_proj", ...), with the layer (-1 if none).
std::pair<std::string, int64_t> role_of(const std::string& hf_name) {
  if (hf_name == "model.embed_tokens.weight") return {"embed", -1};
  if (hf_name == "lm_head.weight") return {"lm_head", -1};
  if (hf_name == "model.norm.weight") return {"norm", -1};
  static const std::string layers = "model.layers.";
  const size_t dot = hf_name.find('.', layers.size());
  const int64_t layer = std::stoll(hf_name.substr(layers.size(), dot - layers.size()));
  std::string what = hf_name.substr(dot + 1);
  what.resize(what.size() - std::string(".weight").size());
  return {what, layer};
}

DType target_type(const ExportType& t, const TensorSpec& spec, const std::string& role, int64_t layer, int64_t n_layers) {
  if (spec.is_norm || role == "mlp.gate") return DType::F32;
  if (!t.scheme) return t.floats;
  const int64_t cols = spec.shape.back();
  if (role == "embed") return row_fallback(t.scheme->base, cols);  // llama-quantize gives token_embd the base type
  return row_fallback(scheme_type_for(*t.scheme, role, layer, n_layers), cols);
}

void set_metadata(const ModelConfig& c, const std::string& name, GgufWriter& w) {
  const std::string a = "deepseek2-ocr.";
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.set("general.architecture", std::string("deepseek2-ocr"));
  w.set("general.name", name);
  w.set(a + "context_length", u32(c.max_positions));
  w.set(a + "embedding_length", u32(c.hidden));
  w.set(a + "feed_forward_length", u32(c.intermediate));
  w.set(a + "block_count", u32(c.n_layers));
  w.set(a + "attention.head_count", u32(c.n_heads));
  w.set(a + "attention.head_count_kv", u32(c.n_kv_heads));
  w.set(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.set(a + "rope.freq_base", static_cast<float>(c.rope_theta));
  w.set(a + "vocab_size", u32(c.vocab));
  w.set(a + "leading_dense_block_count", u32(c.first_k_dense));
  w.set(a + "expert_count", u32(c.n_routed));
  w.set(a + "expert_used_count", u32(c.top_k));
  w.set(a + "expert_feed_forward_length", u32(c.moe_intermediate));
  w.set(a + "expert_shared_count", u32(c.n_shared));
  w.set(a + "expert_weights_scale", c.routed_scaling);
  if (c.norm_topk_prob) w.set(a + "expert_weights_norm", true);
  w.set(a + "expert_gating_func", uint32_t{1});  // softmax
  w.set(a + "attention.sliding_window", u32(c.sliding_window));
}

void check_exportable(const ModelConfig& c) {
  if (c.arch != Arch::DeepseekV2)
    throw Error(Error::Kind::Unsupported, "folio convert writes deepseek_v2 (Unlimited-OCR / DeepSeek-OCR) decoders; this "
                                          "checkpoint is " + c.arch_name());
  if (c.moe_layer_freq != 1)
    throw Error(Error::Kind::Unsupported, "moe_layer_freq " + std::to_string(c.moe_layer_freq) +
                                              " has no llama.cpp equivalent (every layer after the dense ones is MoE)");
  if (!c.rope) throw Error(Error::Kind::Unsupported, "a decoder without RoPE has no llama.cpp equivalent");
  if (c.n_routed == 0) throw Error(Error::Kind::Unsupported, "a deepseek_v2 decoder without routed experts");
}

}  // namespace

const char* gguf_export_types() { return "f32, f16, bf16, q8_0, q4_k_m"; }

bool is_gguf_export_type(const std::string& type) {
  return type == "f32" || type == "f16" || type == "bf16" || type == "q8_0" || type == "q4_k_m";
}

GgufExportSummary write_decoder_gguf(const ModelConfig& c, const TensorSource& hf, const nlohmann::json& tokenizer_json,
                                     const std::string& type, const std::string& out_path, const std::string& model_name) {
  const ExportType t = parse_export_type(type);
  check_exportable(c);
  GgufWriter w;
  set_metadata(c, model_name, w);
  // llama.cpp's llama_ftype numbering (its name for the file's main type).
  static const std::map<std::string, uint32_t> ftype = {{"f32", 0}, {"f16", 1}, {"q8_0", 7}, {"q4_k_m", 15}, {"bf16", 32}};
  w.set("general.file_type", ftype.at(type));
  if (t.scheme) w.set("general.quantization_version", uint32_t{2});  // ggml's current block layouts
  write_gguf_vocab(tokenizer_json, c.vocab, c.bos_id, c.eos_id, "tokenizer.json", w);

  const auto hf_specs = decoder_tensor_specs(c, WeightNaming::HuggingFace);
  const auto gg_specs = decoder_tensor_specs(c, WeightNaming::Gguf);
  std::vector<std::vector<uint8_t>> storage;
  std::map<std::string, size_t> stacked;  // stacked-experts tensor -> index into `views`
  std::vector<TensorView> views;
  GgufExportSummary summary;
  ThreadPool pool;  // one thread per core: quantising to K formats is the slow part of a conversion
  for (size_t i = 0; i < hf_specs.size(); ++i) {
    const TensorView& src = hf.get(hf_specs[i].name, hf_specs[i].shape);
    const auto [role, layer] = role_of(hf_specs[i].name);
    const DType target = target_type(t, hf_specs[i], role, layer, c.n_layers);
    const size_t bytes = static_cast<size_t>(src.rows()) * dtype_row_bytes(target, src.cols());
    const auto slice = parse_expert_slice_name(gg_specs[i].name);
    if (!slice) {
      TensorView v{gg_specs[i].name, target, src.shape, src.data};
      if (target != src.dtype) {
        storage.emplace_back(bytes);
        convert_tensor(src, target, storage.back().data(), &pool);
        v.data = storage.back().data();
      }
      views.push_back(v);
      continue;
    }
    // Expert e of a stacked tensor: experts arrive in order, each converted into its slot.
    auto [it, fresh] = stacked.try_emplace(slice->first, views.size());
    if (fresh) {
      storage.emplace_back(bytes * static_cast<size_t>(c.n_routed));
      views.push_back({slice->first, target, {c.n_routed, src.shape[0], src.shape[1]}, storage.back().data()});
    }
    auto* base = static_cast<uint8_t*>(const_cast<void*>(views[it->second].data));
    convert_tensor(src, target, base + bytes * static_cast<size_t>(slice->second), &pool);
  }
  for (const TensorView& v : views) {
    w.add_tensor(v);
    ++summary.tensors_by_type[v.dtype];
    summary.tensor_bytes += v.nbytes();
  }
  w.write(out_path);
  return summary;
}

}  // namespace folio
