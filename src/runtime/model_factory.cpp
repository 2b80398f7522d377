#include "runtime/model_factory.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/weight_names.h"
#include "text/bpe_tokenizer.h"

namespace folio {

ModelConfig preset_config(const std::string& arch, const std::string& preset) {
  if (preset != "tiny" && preset != "full" && preset != "tiny-k")
    throw_invalid("unknown preset '" + preset + "' (expected tiny, tiny-k or full)");
  if (preset == "tiny-k" && arch != "unlimited-ocr-decoder")
    throw_invalid("preset tiny-k is for --arch unlimited-ocr-decoder only");
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
    // The tiny OCR model gets room for a few pages of image tokens (273 each) plus output.
    c.max_positions = full ? 32768 : arch == "unlimited-ocr" ? 8192 : 2048;
    c.rms_eps = 1e-6f;
    c.sliding_window = 128;
    if (preset == "tiny-k") {
      // Rows of 256 so llama.cpp's K formats apply, and expert down_proj rows of 288 (not a
      // multiple of 256) so its quantizer's q5_0 / q8_0 fallbacks appear too: the GGUF oracle model.
      c.hidden = 256;
      c.intermediate = 256;
      c.moe_intermediate = 288;
      c.n_routed = 4;
      c.top_k = 2;
      c.n_shared = 1;
    }
  } else {
    throw_invalid("unknown architecture '" + arch + "' (expected llama, unlimited-ocr or unlimited-ocr-decoder)");
  }
  c.head_dim = c.hidden / c.n_heads;
  c.validate();
  return c;
}

std::optional<VisionConfig> preset_vision_config(const std::string& arch, const std::string& preset) {
  if (arch != "unlimited-ocr") return std::nullopt;
  const ModelConfig dec = preset_config(arch, preset);
  VisionConfig v;  // the published DeepEncoder
  if (preset == "tiny") {
    // Every structural feature of the real tower (windowed and global SAM blocks, relative
    // positions, neck, two stride-2 convolutions, CLIP over SAM tokens, projector), with widths
    // small enough to encode a 1024 page in well under a second on one core.
    v.sam_width = 32;
    v.sam_layers = 2;
    v.sam_heads = 2;
    v.sam_global_layers = {1};
    v.sam_mlp = 4 * v.sam_width;
    v.sam_neck = 32;
    v.sam_downsample = {32, 64};
    v.clip_width = 64;
    v.clip_layers = 1;
    v.clip_heads = 2;
    v.clip_mlp = 128;
  }
  v.n_embed = dec.hidden;
  v.validate();
  return v;
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

namespace {

// How a random tensor is initialised.
enum class Init { Matrix, Norm, Bias, Table, Embedding };

struct RandomSpec {
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Matrix;
};

// Every tensor of the DeepEncoder under its official name, as SamEncoder, ClipEncoder and
// DeepEncoder read them (DeepEncoder refuses a checkpoint with a missing or an extra one, which the
// tests rely on to keep this list honest).
std::vector<RandomSpec> vision_specs(const VisionConfig& v) {
  std::vector<RandomSpec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, Init init) { out.push_back({std::move(name), std::move(shape), init}); };
  const std::string s = "model.sam_model.";
  const int64_t D = v.sam_width, hd = v.sam_head_dim(), G = v.sam_image / v.sam_patch, N = v.sam_neck;
  add(s + "patch_embed.proj.weight", {D, 3, v.sam_patch, v.sam_patch}, Init::Matrix);
  add(s + "patch_embed.proj.bias", {D}, Init::Bias);
  add(s + "pos_embed", {1, G, G, D}, Init::Table);
  for (int64_t i = 0; i < v.sam_layers; ++i) {
    const std::string b = s + "blocks." + std::to_string(i) + ".";
    const int64_t L = 2 * (v.sam_is_global(i) ? G : v.sam_window) - 1;
    add(b + "norm1.weight", {D}, Init::Norm);
    add(b + "norm1.bias", {D}, Init::Bias);
    add(b + "attn.qkv.weight", {3 * D, D}, Init::Matrix);
    add(b + "attn.qkv.bias", {3 * D}, Init::Bias);
    add(b + "attn.proj.weight", {D, D}, Init::Matrix);
    add(b + "attn.proj.bias", {D}, Init::Bias);
    add(b + "attn.rel_pos_h", {L, hd}, Init::Table);
    add(b + "attn.rel_pos_w", {L, hd}, Init::Table);
    add(b + "norm2.weight", {D}, Init::Norm);
    add(b + "norm2.bias", {D}, Init::Bias);
    add(b + "mlp.lin1.weight", {v.sam_mlp, D}, Init::Matrix);
    add(b + "mlp.lin1.bias", {v.sam_mlp}, Init::Bias);
    add(b + "mlp.lin2.weight", {D, v.sam_mlp}, Init::Matrix);
    add(b + "mlp.lin2.bias", {D}, Init::Bias);
  }
  add(s + "neck.0.weight", {N, D, 1, 1}, Init::Matrix);
  add(s + "neck.1.weight", {N}, Init::Norm);
  add(s + "neck.1.bias", {N}, Init::Bias);
  add(s + "neck.2.weight", {N, N, 3, 3}, Init::Matrix);
  add(s + "neck.3.weight", {N}, Init::Norm);
  add(s + "neck.3.bias", {N}, Init::Bias);
  int64_t in = N;
  for (size_t i = 0; i < v.sam_downsample.size(); ++i) {
    add(s + "net_" + std::to_string(i + 2) + ".weight", {v.sam_downsample[i], in, 3, 3}, Init::Matrix);
    in = v.sam_downsample[i];
  }
  const std::string c = "model.vision_model.";
  const int64_t C = v.clip_width, M = v.clip_mlp;
  add(c + "embeddings.class_embedding", {C}, Init::Table);
  add(c + "embeddings.patch_embedding.weight", {C, 3, 14, 14}, Init::Matrix);  // in the published file, never read
  add(c + "embeddings.position_embedding.weight", {1 + 16 * 16, C}, Init::Table);  // CLIP-L/14 at 224: 16 x 16 + CLS
  add(c + "pre_layrnorm.weight", {C}, Init::Norm);
  add(c + "pre_layrnorm.bias", {C}, Init::Bias);
  for (int64_t i = 0; i < v.clip_layers; ++i) {
    const std::string b = c + "transformer.layers." + std::to_string(i) + ".";
    add(b + "layer_norm1.weight", {C}, Init::Norm);
    add(b + "layer_norm1.bias", {C}, Init::Bias);
    add(b + "self_attn.qkv_proj.weight", {3 * C, C}, Init::Matrix);
    add(b + "self_attn.qkv_proj.bias", {3 * C}, Init::Bias);
    add(b + "self_attn.out_proj.weight", {C, C}, Init::Matrix);
    add(b + "self_attn.out_proj.bias", {C}, Init::Bias);
    add(b + "layer_norm2.weight", {C}, Init::Norm);
    add(b + "layer_norm2.bias", {C}, Init::Bias);
    add(b + "mlp.fc1.weight", {M, C}, Init::Matrix);
    add(b + "mlp.fc1.bias", {M}, Init::Bias);
    add(b + "mlp.fc2.weight", {C, M}, Init::Matrix);
    add(b + "mlp.fc2.bias", {C}, Init::Bias);
  }
  add("model.projector.layers.weight", {v.n_embed, C + v.sam_channels()}, Init::Matrix);
  add("model.projector.layers.bias", {v.n_embed}, Init::Bias);
  add("model.image_newline", {v.n_embed}, Init::Embedding);
  add("model.view_seperator", {v.n_embed}, Init::Embedding);
  return out;
}

// The published Unlimited-OCR config.json layout around a decoder and vision config.
nlohmann::json unlimited_ocr_config_json(const ModelConfig& cfg, const VisionConfig& v, const VisionConfig& published) {
  using nlohmann::json;
  json lang = cfg.to_hf_json();
  lang["architectures"] = {"DeepseekOCRForCausalLM"};
  lang["lm_head"] = true;
  lang["rm_head"] = false;
  json sam = {{"width", v.sam_width},
              {"layers", v.sam_layers},
              {"heads", v.sam_heads},
              {"global_attn_indexes", v.sam_global_layers},
              {"downsample_channels", v.sam_downsample}};
  // Sizes the published file leaves to code defaults are written only when they differ.
  if (v.sam_window != published.sam_window) sam["window_size"] = v.sam_window;
  if (v.sam_patch != published.sam_patch) sam["patch_size"] = v.sam_patch;
  if (v.sam_image != published.sam_image) sam["image_size"] = v.sam_image;
  if (v.sam_neck != published.sam_neck) sam["out_chans"] = v.sam_neck;
  if (v.sam_mlp != v.sam_width * 4) throw_invalid("vision preset: SAM MLP must be 4 x width");
  json clip = {{"width", v.clip_width}, {"layers", v.clip_layers}, {"heads", v.clip_heads}, {"image_size", 224}, {"patch_size", 14}};
  if (v.clip_mlp != published.clip_mlp) clip["ffn_hidden_size"] = v.clip_mlp;
  json root = {{"_name_or_path", "Unlimited-OCR"},
               {"architectures", {"UnlimitedOCRForCausalLM"}},
               {"model_type", "unlimited-ocr"},
               {"candidate_resolutions", {{1024, 1024}}},
               {"global_view_pos", "head"},
               {"tile_tag", "2D"},
               {"language_config", lang},
               {"projector_config",
                {{"input_dim", v.clip_width + v.sam_channels()},
                 {"model_type", "mlp_projector"},
                 {"n_embed", v.n_embed},
                 {"projector_type", "linear"}}},
               {"vision_config",
                {{"image_size", 1024},
                 {"mlp_ratio", 3.7362},
                 {"model_name", "deeplip_b_l"},
                 {"model_type", "vision"},
                 {"width", {{"clip-l-14-224", clip}, {"sam_vit_b", sam}}}}}};
  // The published file repeats the language model's keys at the top level.
  for (auto it = lang.begin(); it != lang.end(); ++it)
    if (it.key() != "model_type" && it.key() != "architectures") root[it.key()] = it.value();
  root["sliding_window"] = cfg.sliding_window;
  return root;
}

}  // namespace

void write_random_checkpoint(const ModelConfig& cfg, const std::string& out_dir, uint64_t seed, DType dtype) {
  write_random_checkpoint(cfg, std::nullopt, out_dir, seed, dtype);
}

void write_random_checkpoint(const ModelConfig& cfg, const std::optional<VisionConfig>& vision, const std::string& out_dir,
                             uint64_t seed, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw_invalid(std::string("make-model writes f32, f16 or bf16 weights, not ") + dtype_name(dtype));
  if (vision) {
    vision->validate();
    if (vision->n_embed != cfg.hidden)
      throw_invalid("vision projector width " + std::to_string(vision->n_embed) + " differs from the decoder's hidden size " +
                    std::to_string(cfg.hidden));
  }
  std::filesystem::create_directories(out_dir);
  std::vector<RandomSpec> specs;
  for (const TensorSpec& s : decoder_tensor_specs(cfg, WeightNaming::HuggingFace)) {
    const bool embedding = s.name.find("embed") != std::string::npos || s.name == "token_embd.weight";
    specs.push_back({s.name, s.shape, s.is_norm ? Init::Norm : embedding ? Init::Embedding : Init::Matrix});
  }
  if (vision)
    for (RandomSpec& s : vision_specs(*vision)) specs.push_back(std::move(s));
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorView> views;
  storage.reserve(specs.size());
  SplitMix rng{seed};
  std::vector<float> buf;
  for (const RandomSpec& s : specs) {
    TensorView v;
    v.name = s.name;
    v.dtype = dtype;
    v.shape = s.shape;
    int64_t n = v.numel();
    buf.resize(static_cast<size_t>(n));
    // Uniform with std 1/sqrt(fan_in) for matrices and convolutions (embeddings: std 1), norms near
    // 1, small biases and position tables: activations keep a sane scale through the layers, so
    // random models give varied, non-degenerate tokens.
    int64_t fan_in = 1;
    for (size_t d = 1; d < s.shape.size(); ++d) fan_in *= s.shape[d];
    float base = 0.f, amp = 0.f;
    switch (s.init) {
      case Init::Matrix: amp = 1.7f / std::sqrt(static_cast<float>(s.shape.size() > 1 ? fan_in : s.shape[0])); break;
      case Init::Norm: base = 1.f, amp = 0.1f; break;
      case Init::Bias: amp = 0.02f; break;
      case Init::Table: amp = 0.1f; break;
      case Init::Embedding: amp = 1.7f; break;
    }
    for (auto& x : buf) x = base + amp * rng.uniform();
    storage.emplace_back(v.nbytes());
    convert_from_f32(dtype, buf.data(), storage.back().data(), n);
    v.data = storage.back().data();
    views.push_back(std::move(v));
  }
  write_safetensors((std::filesystem::path(out_dir) / "model.safetensors").string(), views, {{"format", "pt"}});
  nlohmann::json j = vision ? unlimited_ocr_config_json(cfg, *vision, VisionConfig{}) : cfg.to_hf_json();
  j["torch_dtype"] = dtype == DType::BF16 ? "bfloat16" : dtype == DType::F16 ? "float16" : "float32";
  {
    const auto path = std::filesystem::path(out_dir) / "config.json";
    std::ofstream f(path);
    f << j.dump(2) << "\n";
    if (!f) throw Error(Error::Kind::Io, "cannot write " + path.string());
  }
  std::vector<std::pair<std::string, int32_t>> specials = {{"<｜begin▁of▁sentence｜>", cfg.bos_id},
                                                           {"<｜end▁of▁sentence｜>", cfg.eos_id}};
  if (cfg.arch == Arch::DeepseekV2 && cfg.vocab > 128815)
    specials.push_back({"<image>", 128815});
  else if (vision)
    specials.push_back({"<image>", static_cast<int32_t>(cfg.vocab - 1)});
  write_synthetic_bpe_tokenizer_json((std::filesystem::path(out_dir) / "tokenizer.json").string(),
                                     static_cast<int32_t>(cfg.vocab), specials, seed);
}

}  // namespace folio
