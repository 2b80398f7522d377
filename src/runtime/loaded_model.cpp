#include "runtime/loaded_model.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/expert_slices.h"
#include "io/gguf.h"
#include "kernels/cpu/cpu_features.h"
#include "io/safetensors.h"
#include "model/quantized_weights.h"
#include "text/bpe_tokenizer.h"
#include "text/gguf_vocab.h"

namespace folio {

namespace fs = std::filesystem;

namespace {

// The decoder over the checkpoint's tensors, or over their re-stored linears under `weights`.
void make_decoder(LoadedModel& m, WeightNaming naming, const std::string& weights) {
  const TensorSource* src = m.weights.get();
  if (!weights.empty()) {
    const auto scheme = parse_weight_scheme(weights);
    if (!scheme)
      throw_invalid("--weights: unknown scheme '" + weights + "' (one of " + weight_scheme_names() + ")");
    m.quantized = std::make_unique<QuantizedWeights>(*m.weights, m.config, naming, *scheme);
    src = m.quantized.get();
  }
  m.decoder = std::make_unique<Decoder>(m.config, *src, naming);
}

Residency g_residency = Residency::kResident;

// Files used in place are held as the process asked; files only read to be re-stored stay mapped.
Residency residency_for(const std::string& weights) { return weights.empty() ? g_residency : Residency::kMapped; }

}  // namespace

void set_checkpoint_residency(Residency residency) { g_residency = residency; }

Residency checkpoint_residency() { return g_residency; }

LoadedModel load_model(const std::string& path, bool need_tokenizer, const std::string& weights) {
  LoadedModel m;
  m.path = path;
  if (!fs::exists(path)) throw_invalid("model path '" + path + "' does not exist");
  if (fs::is_regular_file(path) && fs::path(path).extension() == ".gguf") {
    m.format = "gguf";
    auto g = GgufFile::open(path, residency_for(weights));
    // The decode kernels read q4_k and q6_k faster with rows interleaved by 16 (the same bytes, moved).
    if (kernels::interleave_pays()) g->interleave_rows();
    m.config = ModelConfig::from_gguf(*g);
    if (need_tokenizer) m.tokenizer = tokenizer_from_gguf(*g);
    // llama.cpp stacks each MoE layer's experts in one tensor; the decoder reads them one by one.
    m.weights = std::make_unique<ExpertSliceSource>(std::move(g));
    make_decoder(m, WeightNaming::Gguf, weights);
    return m;
  }
  fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  fs::path cfg = dir / "config.json";
  if (!fs::exists(cfg)) throw_invalid("model directory '" + dir.string() + "' has no config.json");
  m.format = "safetensors";
  m.config = ModelConfig::from_hf_file(cfg.string());
  m.weights = SafetensorsCheckpoint::open(path, residency_for(weights));
  make_decoder(m, WeightNaming::HuggingFace, weights);
  if (need_tokenizer) {
    fs::path tok = dir / "tokenizer.json";
    if (!fs::exists(tok)) throw_invalid("model directory '" + dir.string() + "' has no tokenizer.json");
    m.tokenizer = load_tokenizer_json(tok.string());
  }
  return m;
}

}  // namespace folio
