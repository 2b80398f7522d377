// make-model's Unlimited-OCR checkpoints: the config.json it writes reads back as the presets it
// came from, the vision tensors are exactly what DeepEncoder needs (it refuses missing and extra
// ones), and a missing piece is named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "vision/deep_encoder.h"
#include "runtime/model_factory.h"
#include "runtime/ocr_model.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

void expect_same(const VisionConfig& a, const VisionConfig& b) {
  EXPECT_EQ(a.sam_width, b.sam_width);
  EXPECT_EQ(a.sam_layers, b.sam_layers);
  EXPECT_EQ(a.sam_heads, b.sam_heads);
  EXPECT_EQ(a.sam_global_layers, b.sam_global_layers);
  EXPECT_EQ(a.sam_window, b.sam_window);
  EXPECT_EQ(a.sam_patch, b.sam_patch);
  EXPECT_EQ(a.sam_image, b.sam_image);
  EXPECT_EQ(a.sam_mlp, b.sam_mlp);
  EXPECT_EQ(a.sam_neck, b.sam_neck);
  EXPECT_EQ(a.sam_downsample, b.sam_downsample);
  EXPECT_EQ(a.clip_width, b.clip_width);
  EXPECT_EQ(a.clip_layers, b.clip_layers);
  EXPECT_EQ(a.clip_heads, b.clip_heads);
  EXPECT_EQ(a.clip_mlp, b.clip_mlp);
  EXPECT_EQ(a.n_embed, b.n_embed);
}

TEST(OcrModelFactory, PresetsAreThePublishedModelAndASmallOne) {
  auto full = preset_vision_config("unlimited-ocr", "full");
  ASSERT_TRUE(full.has_value());
  VisionConfig published;  // the defaults are the published DeepEncoder
  published.n_embed = 1280;
  expect_same(*full, published);
  EXPECT_EQ(preset_config("unlimited-ocr", "full").hidden, 1280);
  EXPECT_FALSE(preset_vision_config("unlimited-ocr-decoder", "tiny").has_value());
  EXPECT_FALSE(preset_vision_config("llama", "tiny").has_value());
}

TEST(OcrModelFactory, TinyCheckpointRoundTrips) {
  const fs::path dir = fs::temp_directory_path() / ("folio_ocr_factory_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const ModelConfig dec = preset_config("unlimited-ocr", "tiny");
  const VisionConfig vis = *preset_vision_config("unlimited-ocr", "tiny");
  write_random_checkpoint(dec, vis, dir.string(), 1, DType::BF16);

  expect_same(VisionConfig::from_hf_file((dir / "config.json").string()), vis);
  const ModelConfig back = ModelConfig::from_hf_file((dir / "config.json").string());
  EXPECT_EQ(back.hidden, dec.hidden);
  EXPECT_EQ(back.n_layers, dec.n_layers);
  EXPECT_EQ(back.max_positions, dec.max_positions);
  EXPECT_EQ(back.n_routed, dec.n_routed);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  EXPECT_EQ(j["hidden_size"], j["language_config"]["hidden_size"]);  // repeated at the top, as published
  EXPECT_EQ(j["torch_dtype"], "bfloat16");

  // Every vision tensor is used: DeepEncoder rejects unknown ones under its prefixes.
  auto st = SafetensorsCheckpoint::open(dir.string());
  EXPECT_NO_THROW(DeepEncoder(vis, *st));
  EXPECT_NE(st->find("model.view_seperator"), nullptr);
  EXPECT_NO_THROW(load_ocr_model(dir.string()));

  // A model whose projector does not match the decoder is refused when written.
  VisionConfig wrong = vis;
  wrong.n_embed = 32;
  EXPECT_THROW(write_random_checkpoint(dec, wrong, (dir / "bad").string(), 1, DType::F32), Error);
  fs::remove_all(dir);
}

// One registry of OCR models: a config.json names its model_type; an unknown one is refused with
// the list of the known ones (from the registry), and a directory of an unknown type is not taken
// for an OCR model. The decoder's kind comes from text_config, so a model of folio's own with a
// new name and a llama decoder needs no change in ModelConfig.
TEST(OcrModelRegistry, UnknownTypesAreNamedAndNewNamesNeedNoDecoderList) {
  const fs::path dir = fs::temp_directory_path() / ("folio_ocr_registry_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(std::string(FOLIO_SOURCE_DIR) + "/models/folio-mini-ocr-2/config.json"));
  cfg["model_type"] = "folio-mini-ocr-9";
  std::ofstream(dir / "config.json") << cfg.dump();
  EXPECT_FALSE(is_ocr_model_dir(dir.string()));
  try {
    load_ocr_model(dir.string());
    ADD_FAILURE() << "an unknown model_type loaded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'folio-mini-ocr-9' is not an OCR model folio knows"), std::string::npos) << what;
    for (const char* known : {"unlimited-ocr", "deepseek-ocr", "folio-mini-ocr", "folio-mini-ocr-2"})
      EXPECT_NE(what.find(known), std::string::npos) << known;
  }
  const ModelConfig decoder = ModelConfig::from_hf_json(cfg);
  EXPECT_EQ(decoder.arch, Arch::Llama);
  EXPECT_EQ(decoder.model_type, "folio-mini-ocr-9");
  cfg["text_config"]["model_type"] = "mamba";
  EXPECT_THROW(ModelConfig::from_hf_json(cfg), Error);
  EXPECT_TRUE(is_ocr_model_dir(std::string(FOLIO_SOURCE_DIR) + "/models/folio-mini-ocr-2"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace folio
