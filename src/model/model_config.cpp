#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "io/gguf.h"

namespace folio {

namespace {

using nlohmann::json;

int64_t get_int(const json& j, const char* key, int64_t fallback, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw_invalid(std::string("config.json: missing required key '") + key + "'");
    return fallback;
  }
  if (!it->is_number_integer()) throw_invalid(std::string("config.json: key '") + key + "' must be an integer");
  return it->get<int64_t>();
}

double get_num(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw_invalid(std::string("config.json: key '") + key + "' must be a number");
  return it->get<double>();
}

int32_t token_id(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return -1;
  if (it->is_array()) return it->empty() ? -1 : (*it)[0].get<int32_t>();  // some configs list several EOS ids
  return it->get<int32_t>();
}

}  // namespace

void ModelConfig::validate() const {
  auto pos = [](int64_t v, const char* what) {
    if (v <= 0) throw_invalid(std::string("model config: ") + what + " must be positive, got " + std::to_string(v));
  };
  pos(hidden, "hidden_size");
  pos(n_layers, "num_hidden_layers");
  pos(n_heads, "num_attention_heads");
  pos(n_kv_heads, "num_key_value_heads");
  pos(head_dim, "head_dim");
  pos(vocab, "vocab_size");
  pos(max_positions, "max_position_embeddings");
  if (n_heads % n_kv_heads != 0)
    throw_invalid("model config: num_attention_heads " + std::to_string(n_heads) + " is not a multiple of num_key_value_heads " +
                  std::to_string(n_kv_heads));
  if (head_dim % 2 != 0) throw_invalid("model config: head_dim must be even for RoPE");
  if (first_k_dense < n_layers) pos(n_routed > 0 ? moe_intermediate : 1, "moe_intermediate_size");
  if (n_routed > 0) {
    pos(top_k, "num_experts_per_tok");
    if (top_k > n_routed) throw_invalid("model config: num_experts_per_tok exceeds n_routed_experts");
    pos(moe_layer_freq, "moe_layer_freq");
  }
  if (n_routed == 0 || first_k_dense > 0) pos(intermediate, "intermediate_size");
  if (sliding_window < 1) throw_invalid("model config: sliding_window_size must be at least 1");
}

ModelConfig ModelConfig::from_hf_json(const json& root) {
  ModelConfig c;
  // Unlimited-OCR / DeepSeek-OCR keep the language model's settings in "language_config".
  // folio's own mini OCR models keep their (llama-style) decoder's settings in "text_config".
  const char* nested = root.contains("language_config") ? "language_config" : "text_config";
  const json& j = root.contains(nested) && root[nested].is_object() ? root[nested] : root;
  c.model_type = root.value("model_type", j.value("model_type", std::string()));
  // A model of folio's own names its decoder's kind in text_config; any OCR model whose decoder is
  // llama-style loads here without this file knowing its name.
  const std::string decoder_type =
      std::string(nested) == "text_config" && j.contains("model_type") ? j.value("model_type", std::string()) : c.model_type;
  bool deepseek = decoder_type == "deepseek_v2" || decoder_type == "unlimited-ocr" || decoder_type == "deepseek_vl_v2" ||
                  decoder_type == "deepseek-ocr" || j.contains("n_routed_experts") || j.contains("first_k_dense_replace");
  if (!deepseek && decoder_type != "llama" && !decoder_type.empty())
    throw Error(Error::Kind::Unsupported, "config.json: model_type '" + decoder_type +
                                              "' is not supported (llama, deepseek_v2, unlimited-ocr; a model of "
                                              "folio's own names llama in text_config.model_type)");
  c.arch = deepseek ? Arch::DeepseekV2 : Arch::Llama;
  if (deepseek && j.value("use_mla", false))
    throw Error(Error::Kind::Unsupported, "config.json: DeepSeek-V2 with MLA (use_mla: true) is not supported");
  c.hidden = get_int(j, "hidden_size", 0, true);
  c.n_layers = get_int(j, "num_hidden_layers", 0, true);
  c.n_heads = get_int(j, "num_attention_heads", 0, true);
  c.n_kv_heads = get_int(j, "num_key_value_heads", c.n_heads, false);
  c.head_dim = get_int(j, "head_dim", c.n_heads > 0 ? c.hidden / c.n_heads : 0, false);
  c.intermediate = get_int(j, "intermediate_size", 0, false);
  c.vocab = get_int(j, "vocab_size", 0, true);
  c.max_positions = get_int(j, "max_position_embeddings", 4096, false);
  c.rms_eps = static_cast<float>(get_num(j, "rms_norm_eps", 1e-6));
  c.rope_theta = get_num(j, "rope_theta", 10000.0);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw Error(Error::Kind::Unsupported, "config.json: rope_scaling is not supported");
  const std::string pe = j.value("position_encoding", std::string("rope"));
  if (pe != "rope" && pe != "none")
    throw_invalid("config.json: position_encoding must be \"rope\" or \"none\", not \"" + pe + "\"");
  c.rope = pe == "rope";
  c.tie_embeddings = j.value("tie_word_embeddings", false);
  c.bos_id = token_id(j, "bos_token_id");
  c.eos_id = token_id(j, "eos_token_id");
  c.sliding_window = get_int(j, "sliding_window_size", get_int(root, "sliding_window_size", 128, false), false);
  if (deepseek) {
    c.moe_intermediate = get_int(j, "moe_intermediate_size", 0, false);
    c.n_routed = get_int(j, "n_routed_experts", 0, false);
    c.n_shared = get_int(j, "n_shared_experts", 0, false);
    c.top_k = get_int(j, "num_experts_per_tok", 0, false);
    c.first_k_dense = get_int(j, "first_k_dense_replace", 0, false);
    c.moe_layer_freq = get_int(j, "moe_layer_freq", 1, false);
    c.norm_topk_prob = j.value("norm_topk_prob", false);
    c.routed_scaling = static_cast<float>(get_num(j, "routed_scaling_factor", 1.0));
    std::string scoring = j.value("scoring_func", std::string("softmax"));
    if (scoring != "softmax") throw Error(Error::Kind::Unsupported, "config.json: scoring_func '" + scoring + "' is not supported");
    std::string topk = j.value("topk_method", std::string("greedy"));
    if (topk != "greedy") throw Error(Error::Kind::Unsupported, "config.json: topk_method '" + topk + "' is not supported");
  }
  c.validate();
  return c;
}

ModelConfig ModelConfig::from_hf_file(const std::string& path) { return from_hf_json(read_json_file(path)); }

namespace {

// The tokenizer half of a GGUF's settings: BOS/EOS ids and the vocabulary size.
void gguf_vocab(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  c.bos_id = static_cast<int32_t>(g.get_int("tokenizer.ggml.bos_token_id").value_or(-1));
  c.eos_id = static_cast<int32_t>(g.get_int("tokenizer.ggml.eos_token_id").value_or(-1));
  auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  c.vocab = g.get_int(arch + ".vocab_size").value_or(static_cast<int64_t>(tokens.size()));
  if (c.vocab == 0) {
    if (const TensorView* t = g.find("token_embd.weight")) c.vocab = t->shape[0];
  }
  c.tie_embeddings = g.find("output.weight") == nullptr;
}

// llama.cpp's "deepseek2-ocr": DeepSeek-V2 without MLA (plain MHA, NEOX-style RoPE over the whole
// head, so Q/K rows are stored unpermuted), softmax-gated routed experts plus shared experts.
void gguf_deepseek2_ocr(const GgufFile& g, const std::string& a, ModelConfig& c) {
  auto need = [&](const std::string& key) {
    auto v = g.get_int(a + "." + key);
    if (!v) throw_invalid("GGUF: missing metadata key '" + a + "." + key + "' in " + g.description());
    return *v;
  };
  c.model_type = "deepseek_v2";
  c.arch = Arch::DeepseekV2;
  c.rope_style = kernels::RopeStyle::RotateHalf;
  c.head_dim = c.n_heads > 0 ? c.hidden / c.n_heads : 0;
  c.moe_intermediate = need("expert_feed_forward_length");
  c.n_routed = need("expert_count");
  c.top_k = need("expert_used_count");
  c.n_shared = g.get_int(a + ".expert_shared_count").value_or(0);
  c.first_k_dense = g.get_int(a + ".leading_dense_block_count").value_or(0);
  c.routed_scaling = static_cast<float>(g.get_float(a + ".expert_weights_scale").value_or(1.0));
  if (const GgufValue* norm = g.get(a + ".expert_weights_norm"))
    if (const bool* b = std::get_if<bool>(norm)) c.norm_topk_prob = *b;
  // llama.cpp's gating functions: 1 softmax (the default when absent), 2 sigmoid.
  const int64_t gating = g.get_int(a + ".expert_gating_func").value_or(1);
  if (gating != 1 && gating != 0)
    throw Error(Error::Kind::Unsupported, "GGUF: " + a + ".expert_gating_func " + std::to_string(gating) +
                                              " is not supported (softmax) in " + g.description());
  c.sliding_window = g.get_int(a + ".attention.sliding_window").value_or(128);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& g) {
  ModelConfig c;
  const std::string arch = g.get_string("general.architecture").value_or("?");
  if (arch != "llama" && arch != "deepseek2-ocr")
    throw Error(Error::Kind::Unsupported, "GGUF: architecture '" + arch + "' is not supported (llama, deepseek2-ocr)");
  auto need = [&](const std::string& key) {
    auto v = g.get_int(arch + "." + key);
    if (!v) throw_invalid("GGUF: missing metadata key '" + arch + "." + key + "' in " + g.description());
    return *v;
  };
  c.hidden = need("embedding_length");
  c.n_layers = need("block_count");
  c.n_heads = need("attention.head_count");
  c.n_kv_heads = g.get_int(arch + ".attention.head_count_kv").value_or(c.n_heads);
  c.intermediate = need("feed_forward_length");
  c.max_positions = g.get_int(arch + ".context_length").value_or(4096);
  c.rms_eps = static_cast<float>(g.get_float(arch + ".attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_theta = g.get_float(arch + ".rope.freq_base").value_or(10000.0);
  gguf_vocab(g, arch, c);
  if (arch == "deepseek2-ocr") {
    gguf_deepseek2_ocr(g, arch, c);
  } else {
    c.model_type = "llama";
    c.arch = Arch::Llama;
    c.head_dim = g.get_int("llama.attention.key_length").value_or(c.n_heads > 0 ? c.hidden / c.n_heads : 0);
    // llama.cpp's converter permutes Q/K rows so that adjacent pairs rotate together.
    c.rope_style = kernels::RopeStyle::Interleaved;
  }
  c.validate();
  return c;
}

json ModelConfig::to_hf_json() const {
  json j;
  j["hidden_size"] = hidden;
  j["num_hidden_layers"] = n_layers;
  j["num_attention_heads"] = n_heads;
  j["num_key_value_heads"] = n_kv_heads;
  j["intermediate_size"] = intermediate;
  j["vocab_size"] = vocab;
  j["max_position_embeddings"] = max_positions;
  j["rms_norm_eps"] = rms_eps;
  j["rope_theta"] = rope_theta;
  if (!rope) j["position_encoding"] = "none";
  j["bos_token_id"] = bos_id;
  j["eos_token_id"] = eos_id;
  j["tie_word_embeddings"] = tie_embeddings;
  if (arch == Arch::Llama) {
    j["model_type"] = "llama";
    j["architectures"] = {"LlamaForCausalLM"};
    j["head_dim"] = head_dim;
    j["hidden_act"] = "silu";
    return j;
  }
  j["model_type"] = "deepseek_v2";
  j["architectures"] = {"DeepseekV2ForCausalLM"};
  j["use_mla"] = false;
  j["kv_lora_rank"] = nullptr;
  j["q_lora_rank"] = nullptr;
  j["qk_nope_head_dim"] = 0;
  j["qk_rope_head_dim"] = 0;
  j["v_head_dim"] = head_dim;
  j["moe_intermediate_size"] = moe_intermediate;
  j["n_routed_experts"] = n_routed;
  j["n_shared_experts"] = n_shared;
  j["num_experts_per_tok"] = top_k;
  j["first_k_dense_replace"] = first_k_dense;
  j["moe_layer_freq"] = moe_layer_freq;
  j["norm_topk_prob"] = norm_topk_prob;
  j["routed_scaling_factor"] = routed_scaling;
  j["scoring_func"] = "softmax";
  j["topk_method"] = "greedy";
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["sliding_window_size"] = sliding_window;
  return j;
}

}  // namespace folio
