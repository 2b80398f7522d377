#include "model/quantized_weights.h"

#include "core/error.h"
#include "core/row_interleave.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_features.h"

namespace folio {

namespace {

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third one between.
bool more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

}  // namespace

DType row_fallback(DType t, int64_t cols) {
  if (cols % dtype_block_elems(t) == 0) return t;
  switch (t) {
    case DType::Q4_K: return cols % 32 == 0 ? DType::Q5_0 : DType::BF16;
    case DType::Q5_K: return cols % 32 == 0 ? DType::Q5_1 : DType::BF16;
    case DType::Q6_K: return cols % 32 == 0 ? DType::Q8_0 : DType::BF16;
    default: return cols % 32 == 0 ? t : DType::BF16;
  }
}

std::optional<WeightScheme> parse_weight_scheme(const std::string& name) {
  if (name == "q4_k_m") return WeightScheme{name, DType::Q4_K, true};
  if (name == "q5_k_m") return WeightScheme{name, DType::Q5_K, true};
  const auto t = parse_dtype(name);
  if (!t || !dtype_is_block_quantized(*t)) return std::nullopt;
  return WeightScheme{name, *t, false};
}

const char* weight_scheme_names() { return "q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m"; }

DType scheme_type_for(const WeightScheme& scheme, const std::string& role, int64_t layer, int64_t n_layers) {
  if (!scheme.k_mix) return scheme.base;
  if (role == "lm_head") return DType::Q6_K;
  const bool wants_more = role == "self_attn.v_proj" || role.ends_with("down_proj");
  return wants_more && more_bits(layer, n_layers) ? DType::Q6_K : scheme.base;
}

QuantizedWeights::QuantizedWeights(const TensorSource& inner, const ModelConfig& c, WeightNaming naming,
                                   WeightScheme scheme)
    : inner_(inner), scheme_(std::move(scheme)) {
  ThreadPool pool;  // one thread per core: quantising to K formats takes minutes on one
  auto layer_linear = [&](int64_t l, const std::string& what) {
    quantize(layer_tensor_name(naming, l, what), scheme_type_for(scheme_, what, l, c.n_layers), pool);
  };
  auto mlp = [&](int64_t l, const std::string& prefix) {
    for (const char* p : {"gate_proj", "up_proj", "down_proj"}) layer_linear(l, prefix + p);
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (const char* p : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"})
      layer_linear(l, p);
    if (!c.is_moe_layer(l)) {
      mlp(l, "mlp.");
      continue;
    }
    for (int64_t e = 0; e < c.n_routed; ++e) mlp(l, "mlp.experts." + std::to_string(e) + ".");
    if (c.n_shared > 0) mlp(l, "mlp.shared_experts.");
  }
  if (!c.tie_embeddings) quantize(global_tensor_name(naming, "lm_head"), scheme_type_for(scheme_, "lm_head", -1, c.n_layers), pool);
}

void QuantizedWeights::quantize(const std::string& name, DType target, ThreadPool& pool) {
  const TensorView* t = inner_.find(name);
  if (t == nullptr || t->shape.size() != 2 || dtype_is_block_quantized(t->dtype)) return;  // the decoder reports a missing one
  target = row_fallback(target, t->cols());
  if (target == t->dtype || !dtype_is_block_quantized(target)) return;
  std::vector<uint8_t> bytes(static_cast<size_t>(t->shape[0]) * dtype_row_bytes(target, t->cols()));
  convert_tensor(*t, target, bytes.data(), &pool);
  // The decode kernels read q4_k and q6_k faster with rows interleaved by 16 (the same bytes, moved).
  if (interleaved_dtype(target) && t->shape[0] % kGroupRows == 0 && kernels::interleave_pays()) {
    interleave_rows(target, bytes.data(), t->shape[0], t->cols(), bytes.data());
    target = *interleaved_dtype(target);
  }
  TensorView v = *t;
  v.dtype = target;
  v.data = bytes.data();
  storage_.push_back(std::move(bytes));
  views_[name] = v;
}

const TensorView* QuantizedWeights::find(std::string_view name) const {
  auto it = views_.find(name);
  return it != views_.end() ? &it->second : inner_.find(name);
}

std::string QuantizedWeights::description() const { return inner_.description() + " (weights " + scheme_.name + ")"; }

}  // namespace folio
