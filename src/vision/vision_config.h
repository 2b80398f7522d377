// VisionConfig: the sizes of the DeepEncoder (SAM ViT-B + CLIP-L/14 + projector) of Unlimited-OCR /
// DeepSeek-OCR, read from the checkpoint's config.json.
//
// The real model's values are the defaults, so a config.json without a vision section (or with the
// published one, which lists only some sizes) gives the real encoder. Sizes the published config
// does not carry (window 14, patch 16, neck 256, epsilons, CLIP MLP 4096) can be overridden with
// extra keys, which is how the tiny golden-test model is described.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace folio {

struct VisionConfig {
  // SAM ViT-B ("vision_config.width.sam_vit_b": width, layers, heads, global_attn_indexes,
  // downsample_channels; optional window_size, patch_size, image_size, mlp_ratio, out_chans).
  int64_t sam_width = 768;
  int64_t sam_layers = 12;
  int64_t sam_heads = 12;
  std::vector<int64_t> sam_global_layers = {2, 5, 8, 11};
  int64_t sam_window = 14;
  int64_t sam_patch = 16;
  int64_t sam_image = 1024;   // the size pos_embed was trained for: a (image / patch)^2 table
  int64_t sam_mlp = 3072;     // width * mlp_ratio (4)
  int64_t sam_neck = 256;
  std::vector<int64_t> sam_downsample = {512, 1024};  // net_2, net_3 output channels
  float sam_eps = 1e-6f;

  // CLIP-L/14 (the first "vision_config.width" entry whose name starts with "clip": width, layers,
  // heads; optional ffn_hidden_size).
  int64_t clip_width = 1024;
  int64_t clip_layers = 24;
  int64_t clip_heads = 16;
  int64_t clip_mlp = 4096;
  float clip_eps = 1e-5f;

  // Projector ("projector_config": input_dim, n_embed): Linear(clip_width + SAM channels -> n_embed).
  int64_t n_embed = 1280;

  int64_t sam_head_dim() const { return sam_width / sam_heads; }
  int64_t clip_head_dim() const { return clip_width / clip_heads; }
  int64_t sam_channels() const { return sam_downsample.back(); }
  bool sam_is_global(int64_t block) const;

  // Positive sizes, heads dividing widths, global layers in range, projector input = CLIP + SAM
  // channels; throws InvalidInput naming the offending key.
  void validate() const;

  static VisionConfig from_hf_json(const nlohmann::json& root);
  static VisionConfig from_hf_file(const std::string& config_json_path);
};

}  // namespace folio
