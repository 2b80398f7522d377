// Loading refuses checkpoints that disagree with their config, naming the tensor at fault.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/decoder.h"
#include "io/safetensors.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/decoder/llama-tiny";

std::string error_of(const ModelConfig& cfg, const TensorSource& src) {
  try {
    Decoder d(cfg, src, WeightNaming::HuggingFace);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

// Writes the fixture's tensors minus `drop`, plus `extra` if given, to a temp file.
std::unique_ptr<SafetensorsFile> rewritten(const std::string& drop, const TensorView* extra) {
  auto st = SafetensorsFile::open(kDir + "/model.safetensors");
  std::vector<TensorView> keep;
  for (const auto& n : st->names())
    if (n != drop) keep.push_back(st->get(n));
  if (extra) keep.push_back(*extra);
  auto path = std::filesystem::temp_directory_path() / ("folio_load_" + std::to_string(getpid()) + ".safetensors");
  write_safetensors(path.string(), keep);
  auto out = SafetensorsFile::open(path.string());
  std::filesystem::remove(path);  // the mapping stays valid
  return out;
}

TEST(DecoderLoad, MissingTensorIsNamed) {
  auto cfg = ModelConfig::from_hf_file(kDir + "/config.json");
  auto src = rewritten("model.layers.1.self_attn.k_proj.weight", nullptr);
  std::string msg = error_of(cfg, *src);
  EXPECT_NE(msg.find("tensor 'model.layers.1.self_attn.k_proj.weight' not found"), std::string::npos) << msg;
}

TEST(DecoderLoad, UnexpectedTensorIsNamed) {
  auto cfg = ModelConfig::from_hf_file(kDir + "/config.json");
  float data[4] = {1, 2, 3, 4};
  TensorView extra{"model.layers.2.input_layernorm.weight", DType::F32, {4}, data};  // a third layer the config lacks
  auto src = rewritten("", &extra);
  std::string msg = error_of(cfg, *src);
  EXPECT_NE(msg.find("unexpected tensor 'model.layers.2.input_layernorm.weight'"), std::string::npos) << msg;
}

TEST(DecoderLoad, WrongShapeIsNamed) {
  auto cfg = ModelConfig::from_hf_file(kDir + "/config.json");
  cfg.n_kv_heads = 4;  // the checkpoint has 2 KV heads
  auto src = SafetensorsFile::open(kDir + "/model.safetensors");
  std::string msg = error_of(cfg, *src);
  EXPECT_NE(msg.find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[64, 64]"), std::string::npos) << msg;  // what the config implies: 4 heads x 16
}

TEST(DecoderLoad, InconsistentConfigIsRejected) {
  nlohmann::json j = {{"model_type", "llama"}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 3}, {"intermediate_size", 96}, {"vocab_size", 256}};
  try {
    ModelConfig::from_hf_json(j);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_key_value_heads"), std::string::npos) << e.what();
  }
  j.erase("vocab_size");
  EXPECT_THROW(ModelConfig::from_hf_json(j), Error);
}

}  // namespace
}  // namespace folio
