#include "runtime/loaded_model.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/io/gguf.h"
#include "model/io/safetensors.h"
#include "model/quantized_weights.h"
#include "text/bpe_tokenizer.h"
#include "text/sentencepiece_tokenizer.h"

namespace folio {

namespace fs = std::filesystem;

namespace {

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g) {
  auto model = g.get_string("tokenizer.ggml.model").value_or("");
  auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty()) throw_invalid(g.description() + ": no tokenizer.ggml.tokens in the GGUF metadata");
  if (model == "llama") {
    SpmVocab v;
    v.tokens = std::move(tokens);
    v.scores = g.get_f32_array("tokenizer.ggml.scores");
    v.types = g.get_i32_array("tokenizer.ggml.token_type");
    if (v.scores.empty()) v.scores.assign(v.tokens.size(), 0.f);
    if (v.types.empty()) v.types.assign(v.tokens.size(), 1);
    v.bos = static_cast<int32_t>(g.get_int("tokenizer.ggml.bos_token_id").value_or(1));
    v.eos = static_cast<int32_t>(g.get_int("tokenizer.ggml.eos_token_id").value_or(2));
    v.unk = static_cast<int32_t>(g.get_int("tokenizer.ggml.unknown_token_id").value_or(0));
    if (const GgufValue* add = g.get("tokenizer.ggml.add_space_prefix")) {
      if (const bool* b = std::get_if<bool>(add)) v.add_space_prefix = *b;
    }
    return make_sentencepiece_tokenizer(std::move(v));
  }
  if (model == "gpt2") {
    // A byte-level BPE vocabulary: rebuild the tokenizer.json it came from and load that.
    nlohmann::json j;
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", g.get_string_array("tokenizer.ggml.merges")}};
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    j["decoder"] = {{"type", "ByteLevel"}};
    j["added_tokens"] = nlohmann::json::array();
    auto types = g.get_i32_array("tokenizer.ggml.token_type");
    for (size_t i = 0; i < types.size() && i < tokens.size(); ++i)
      if (types[i] == 3 || types[i] == 4)
        j["added_tokens"].push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == 3}});
    return load_tokenizer_json_string(j.dump());
  }
  throw Error(Error::Kind::Unsupported, g.description() + ": tokenizer model '" + model + "' is not supported (llama, gpt2)");
}

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

}  // namespace

LoadedModel load_model(const std::string& path, bool need_tokenizer, const std::string& weights) {
  LoadedModel m;
  m.path = path;
  if (!fs::exists(path)) throw_invalid("model path '" + path + "' does not exist");
  if (fs::is_regular_file(path) && fs::path(path).extension() == ".gguf") {
    m.format = "gguf";
    auto g = GgufFile::open(path);
    m.config = ModelConfig::from_gguf(*g);
    if (need_tokenizer) m.tokenizer = tokenizer_from_gguf(*g);
    m.weights = std::move(g);
    make_decoder(m, WeightNaming::Gguf, weights);
    return m;
  }
  fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  fs::path cfg = dir / "config.json";
  if (!fs::exists(cfg)) throw_invalid("model directory '" + dir.string() + "' has no config.json");
  m.format = "safetensors";
  m.config = ModelConfig::from_hf_file(cfg.string());
  m.weights = SafetensorsCheckpoint::open(path);
  make_decoder(m, WeightNaming::HuggingFace, weights);
  if (need_tokenizer) {
    fs::path tok = dir / "tokenizer.json";
    if (!fs::exists(tok)) throw_invalid("model directory '" + dir.string() + "' has no tokenizer.json");
    m.tokenizer = load_tokenizer_json(tok.string());
  }
  return m;
}

}  // namespace folio
