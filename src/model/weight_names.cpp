#include "model/weight_names.h"

#include "core/error.h"

namespace folio {

std::string global_tensor_name(WeightNaming n, const std::string& what) {
  if (n == WeightNaming::Gguf) {
    if (what == "embed") return "token_embd.weight";
    if (what == "norm") return "output_norm.weight";
    return "output.weight";
  }
  if (what == "embed") return "model.embed_tokens.weight";
  if (what == "norm") return "model.norm.weight";
  return "lm_head.weight";
}

std::string layer_tensor_name(WeightNaming n, int64_t layer, const std::string& what) {
  if (n == WeightNaming::Gguf) {
    static const std::pair<const char*, const char*> map[] = {
        {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},  {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},       {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"}};
    const std::string blk = "blk." + std::to_string(layer) + ".";
    for (auto& [hf, gg] : map)
      if (what == hf) return blk + gg + ".weight";
    static const std::pair<const char*, const char*> moe[] = {
        {"mlp.gate", "ffn_gate_inp"},
        {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
        {"mlp.shared_experts.up_proj", "ffn_up_shexp"},
        {"mlp.shared_experts.down_proj", "ffn_down_shexp"}};
    for (auto& [hf, gg] : moe)
      if (what == hf) return blk + gg + ".weight";
    // "mlp.experts.E.up_proj" -> expert E of the stacked "blk.L.ffn_up_exps.weight".
    static const std::string experts = "mlp.experts.";
    if (what.rfind(experts, 0) == 0) {
      const size_t dot = what.find('.', experts.size());
      if (dot != std::string::npos) {
        const std::string proj = what.substr(dot + 1);
        const std::string e = what.substr(experts.size(), dot - experts.size());
        for (const char* p : {"gate", "up", "down"})
          if (proj == std::string(p) + "_proj") return expert_slice_name(blk + "ffn_" + p + "_exps.weight", std::stoll(e));
      }
    }
    throw Error(Error::Kind::Unsupported, "GGUF naming has no tensor for '" + what + "'");
  }
  return "model.layers." + std::to_string(layer) + "." + what + ".weight";
}

std::string expert_slice_name(const std::string& stacked, int64_t expert) {
  return stacked + "[" + std::to_string(expert) + "]";
}

std::optional<std::pair<std::string, int64_t>> parse_expert_slice_name(std::string_view name) {
  if (name.size() < 4 || name.back() != ']') return std::nullopt;
  const size_t open = name.rfind('[');
  if (open == std::string_view::npos || open + 2 > name.size() - 1) return std::nullopt;
  int64_t e = 0;
  for (size_t i = open + 1; i + 1 < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || e > (int64_t{1} << 40)) return std::nullopt;
    e = e * 10 + (name[i] - '0');
  }
  return std::make_pair(std::string(name.substr(0, open)), e);
}

std::vector<TensorSpec> decoder_tensor_specs(const ModelConfig& c, WeightNaming n) {
  const int64_t H = c.hidden, hd = c.head_dim;
  std::vector<TensorSpec> s;
  s.push_back({global_tensor_name(n, "embed"), {c.vocab, H}});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    auto add = [&](const std::string& what, std::vector<int64_t> shape, bool norm = false) {
      s.push_back({layer_tensor_name(n, l, what), std::move(shape), norm});
    };
    auto mlp = [&](const std::string& prefix, int64_t width) {
      add(prefix + "gate_proj", {width, H});
      add(prefix + "up_proj", {width, H});
      add(prefix + "down_proj", {H, width});
    };
    add("self_attn.q_proj", {c.n_heads * hd, H});
    add("self_attn.k_proj", {c.n_kv_heads * hd, H});
    add("self_attn.v_proj", {c.n_kv_heads * hd, H});
    add("self_attn.o_proj", {H, c.n_heads * hd});
    if (c.is_moe_layer(l)) {
      for (int64_t e = 0; e < c.n_routed; ++e) mlp("mlp.experts." + std::to_string(e) + ".", c.moe_intermediate);
      add("mlp.gate", {c.n_routed, H});
      if (c.n_shared > 0) mlp("mlp.shared_experts.", c.moe_intermediate * c.n_shared);
    } else {
      mlp("mlp.", c.intermediate);
    }
    add("input_layernorm", {H}, true);
    add("post_attention_layernorm", {H}, true);
  }
  s.push_back({global_tensor_name(n, "norm"), {H}, true});
  if (!c.tie_embeddings) s.push_back({global_tensor_name(n, "lm_head"), {c.vocab, H}});
  return s;
}

}  // namespace folio
