#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "vision/vision_config.h"

namespace folio {
namespace {

// The vision part of the published Unlimited-OCR config.json (as in the official repository).
const char* kPublished = R"({
  "model_type": "unlimited-ocr",
  "projector_config": {"input_dim": 2048, "model_type": "mlp_projector", "n_embed": 1280, "projector_type": "linear"},
  "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l", "model_type": "vision",
    "width": {"clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14, "width": 1024},
              "sam_vit_b": {"downsample_channels": [512, 1024], "global_attn_indexes": [2, 5, 8, 11], "heads": 12,
                            "layers": 12, "width": 768}}}
})";

std::string error_of(const nlohmann::json& j) {
  try {
    VisionConfig::from_hf_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VisionConfig, PublishedConfigGivesTheRealEncoder) {
  VisionConfig c = VisionConfig::from_hf_json(nlohmann::json::parse(kPublished));
  EXPECT_EQ(c.sam_width, 768);
  EXPECT_EQ(c.sam_layers, 12);
  EXPECT_EQ(c.sam_heads, 12);
  EXPECT_EQ(c.sam_head_dim(), 64);
  EXPECT_EQ(c.sam_global_layers, (std::vector<int64_t>{2, 5, 8, 11}));
  EXPECT_TRUE(c.sam_is_global(5));
  EXPECT_FALSE(c.sam_is_global(4));
  EXPECT_EQ(c.sam_window, 14);
  EXPECT_EQ(c.sam_mlp, 3072);  // SAM's mlp_ratio is 4; the top-level 3.7362 is not SAM's
  EXPECT_EQ(c.sam_neck, 256);
  EXPECT_EQ(c.sam_channels(), 1024);
  EXPECT_EQ(c.clip_width, 1024);
  EXPECT_EQ(c.clip_layers, 24);
  EXPECT_EQ(c.clip_heads, 16);
  EXPECT_EQ(c.clip_mlp, 4096);
  EXPECT_EQ(c.n_embed, 1280);
  EXPECT_FLOAT_EQ(c.sam_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.clip_eps, 1e-5f);
  // No vision section at all: the same defaults.
  VisionConfig d = VisionConfig::from_hf_json(nlohmann::json::object());
  EXPECT_EQ(d.sam_layers, 12);
  EXPECT_EQ(d.n_embed, 1280);
}

TEST(VisionConfig, TinyOverrides) {
  auto j = nlohmann::json::parse(kPublished);
  j["vision_config"]["width"]["sam_vit_b"] = {{"width", 64}, {"layers", 4}, {"heads", 2}, {"global_attn_indexes", {1, 3}}};
  j["vision_config"]["width"]["clip-l-14-224"]["layers"] = 2;
  j["vision_config"]["width"]["clip-l-14-224"]["ffn_hidden_size"] = 512;
  j["projector_config"]["n_embed"] = 64;
  VisionConfig c = VisionConfig::from_hf_json(j);
  EXPECT_EQ(c.sam_width, 64);
  EXPECT_EQ(c.sam_mlp, 256);
  EXPECT_EQ(c.sam_head_dim(), 32);
  EXPECT_EQ(c.clip_layers, 2);
  EXPECT_EQ(c.clip_mlp, 512);
  EXPECT_EQ(c.n_embed, 64);
}

TEST(VisionConfig, BadValuesNameTheKey) {
  auto j = nlohmann::json::parse(kPublished);
  j["vision_config"]["width"]["sam_vit_b"]["global_attn_indexes"] = {2, 5, 8, 12};
  EXPECT_NE(error_of(j).find("global_attn_indexes entry 12"), std::string::npos) << error_of(j);
  j = nlohmann::json::parse(kPublished);
  j["projector_config"]["input_dim"] = 2000;
  EXPECT_NE(error_of(j).find("projector_config.input_dim 2000"), std::string::npos) << error_of(j);
  j = nlohmann::json::parse(kPublished);
  j["vision_config"]["width"]["sam_vit_b"]["heads"] = 7;
  EXPECT_NE(error_of(j).find("sam heads"), std::string::npos) << error_of(j);
  j = nlohmann::json::parse(kPublished);
  j["vision_config"]["width"]["clip-l-14-224"]["layers"] = "24";
  EXPECT_NE(error_of(j).find("clip-l-14-224.layers"), std::string::npos) << error_of(j);
  j = nlohmann::json::parse(kPublished);
  j.erase("projector_config");
  j["vision_config"]["width"]["sam_vit_b"]["downsample_channels"] = {512, 768};
  EXPECT_NE(error_of(j).find("must equal the CLIP width"), std::string::npos) << error_of(j);
}

}  // namespace
}  // namespace folio
