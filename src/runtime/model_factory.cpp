#include "runtime/model_factory.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "model/io/safetensors.h"
#include "model/weight_names.h"
#include "text/bpe_tokenizer.h"

namespace folio {

ModelConfig preset_config(const std::string& arch, const std::string& preset) {
  if (preset != "tiny" && preset != "full") throw_invalid("unknown preset '" + preset + "' (expected tiny or full)");
  const bool full = preset == "full";
  ModelConfig c;
  c.bos_id = 0;
  c.eos_id = 1;
  if (arch == "llama") {
    c.arch = Arch::Llama;
    c.model_type = "llama";
    // full: the TinyLlama-1.1B shape.
    c.hidden = full ? 2048 : 64;
    c.n_layers = full ? 22 : 2;
    c.n_heads = full ? 32 : 4;
    c.n_kv_heads = full ? 4 : 2;
    c.intermediate = full ? 5632 : 128;
    c.vocab = full ? 32000 : 512;
    c.max_positions = full ? 2048 : 1024;
    c.rms_eps = 1e-5f;
  } else if (arch == "unlimited-ocr-decoder" || arch == "unlimited-ocr") {
    // full: the published Unlimited-OCR language model (config.json language_config).
    c.arch = Arch::DeepseekV2;
    c.model_type = "deepseek_v2";
    c.hidden = full ? 1280 : 64;
    c.n_layers = full ? 12 : 3;
    c.n_heads = full ? 10 : 4;
    c.n_kv_heads = c.n_heads;
    c.intermediate = full ? 6848 : 128;
    c.moe_intermediate = full ? 896 : 32;
    c.n_routed = full ? 64 : 8;
    c.n_shared = 2;
    c.top_k = full ? 6 : 3;
    c.first_k_dense = 1;
    c.vocab = full ? 129280 : 512;
    c.max_positions = full ? 32768 : 2048;
    c.rms_eps = 1e-6f;
    c.sliding_window = 128;
  } else {
    throw_invalid("unknown architecture '" + arch + "' (expected llama or unlimited-ocr-decoder)");
  }
  c.head_dim = c.hidden / c.n_heads;
  c.validate();
  return c;
}

namespace {

// Fast seeded uniform noise; quality is irrelevant, speed matters for the 3B full preset.
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }  // [-1, 1)
};

}  // namespace

void write_random_checkpoint(const ModelConfig& cfg, const std::string& out_dir, uint64_t seed, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw_invalid(std::string("make-model writes f32, f16 or bf16 weights, not ") + dtype_name(dtype));
  std::filesystem::create_directories(out_dir);
  auto specs = decoder_tensor_specs(cfg, WeightNaming::HuggingFace);
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorView> views;
  storage.reserve(specs.size());
  SplitMix rng{seed};
  std::vector<float> buf;
  for (const TensorSpec& s : specs) {
    TensorView v;
    v.name = s.name;
    v.dtype = dtype;
    v.shape = s.shape;
    int64_t n = v.numel();
    buf.resize(static_cast<size_t>(n));
    // Uniform with std 1/sqrt(fan_in) (embeddings: std 1), norms near 1: activations keep a sane
    // scale through the layers, so random models give varied, non-degenerate tokens.
    float fan_in = static_cast<float>(s.shape.back());
    float amp = s.is_norm ? 0.1f : (s.name.find("embed") != std::string::npos || s.name == "token_embd.weight" ? 1.7f : 1.7f / std::sqrt(fan_in));
    for (auto& x : buf) x = (s.is_norm ? 1.0f : 0.0f) + amp * rng.uniform();
    storage.emplace_back(v.nbytes());
    convert_from_f32(dtype, buf.data(), storage.back().data(), n);
    v.data = storage.back().data();
    views.push_back(std::move(v));
  }
  write_safetensors((std::filesystem::path(out_dir) / "model.safetensors").string(), views, {{"format", "pt"}});
  nlohmann::json j = cfg.to_hf_json();
  j["torch_dtype"] = dtype == DType::BF16 ? "bfloat16" : dtype == DType::F16 ? "float16" : "float32";
  std::ofstream(std::filesystem::path(out_dir) / "config.json") << j.dump(2) << "\n";
  std::vector<std::pair<std::string, int32_t>> specials = {{"<｜begin▁of▁sentence｜>", cfg.bos_id},
                                                           {"<｜end▁of▁sentence｜>", cfg.eos_id}};
  if (cfg.arch == Arch::DeepseekV2 && cfg.vocab > 128815) specials.push_back({"<image>", 128815});
  write_synthetic_bpe_tokenizer_json((std::filesystem::path(out_dir) / "tokenizer.json").string(),
                                     static_cast<int32_t>(cfg.vocab), specials, seed);
}

}  // namespace folio
