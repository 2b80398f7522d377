#include "vision/vision_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"

namespace folio {

namespace {

using nlohmann::json;

int64_t opt_int(const json& j, const char* key, int64_t fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) throw_invalid("config.json: '" + where + "." + key + "' must be an integer");
  return it->get<int64_t>();
}

std::vector<int64_t> opt_ints(const json& j, const char* key, std::vector<int64_t> fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_array()) throw_invalid("config.json: '" + where + "." + key + "' must be a list of integers");
  std::vector<int64_t> v;
  for (const json& e : *it) {
    if (!e.is_number_integer()) throw_invalid("config.json: '" + where + "." + key + "' must be a list of integers");
    v.push_back(e.get<int64_t>());
  }
  return v;
}

}  // namespace

bool VisionConfig::sam_is_global(int64_t block) const {
  return std::find(sam_global_layers.begin(), sam_global_layers.end(), block) != sam_global_layers.end();
}

void VisionConfig::validate() const {
  auto pos = [](int64_t v, const char* what) {
    if (v <= 0) throw_invalid(std::string("vision config: ") + what + " must be positive, got " + std::to_string(v));
  };
  pos(sam_width, "sam width");
  pos(sam_layers, "sam layers");
  pos(sam_heads, "sam heads");
  pos(sam_window, "sam window_size");
  pos(sam_patch, "sam patch_size");
  pos(sam_image, "sam image_size");
  pos(sam_mlp, "sam mlp width");
  pos(sam_neck, "sam out_chans");
  pos(clip_width, "clip width");
  pos(clip_layers, "clip layers");
  pos(clip_heads, "clip heads");
  pos(clip_mlp, "clip ffn_hidden_size");
  pos(n_embed, "projector n_embed");
  if (sam_width % sam_heads != 0) throw_invalid("vision config: sam width is not a multiple of sam heads");
  if (clip_width % clip_heads != 0) throw_invalid("vision config: clip width is not a multiple of clip heads");
  if (sam_image % sam_patch != 0) throw_invalid("vision config: sam image_size is not a multiple of patch_size");
  if (sam_downsample.empty()) throw_invalid("vision config: sam downsample_channels is empty");
  for (int64_t c : sam_downsample) pos(c, "sam downsample channel");
  for (int64_t g : sam_global_layers)
    if (g < 0 || g >= sam_layers)
      throw_invalid("vision config: sam global_attn_indexes entry " + std::to_string(g) + " is not a block index (0.." +
                    std::to_string(sam_layers - 1) + ")");
  if (sam_channels() != clip_width)
    throw_invalid("vision config: SAM output channels " + std::to_string(sam_channels()) +
                  " must equal the CLIP width " + std::to_string(clip_width) + " (SAM features are CLIP's patch tokens)");
}

VisionConfig VisionConfig::from_hf_json(const json& root) {
  VisionConfig c;
  if (auto vc = root.find("vision_config"); vc != root.end() && vc->is_object()) {
    if (auto w = vc->find("width"); w != vc->end() && w->is_object()) {
      if (auto s = w->find("sam_vit_b"); s != w->end() && s->is_object()) {
        const std::string where = "vision_config.width.sam_vit_b";
        c.sam_width = opt_int(*s, "width", c.sam_width, where);
        c.sam_layers = opt_int(*s, "layers", c.sam_layers, where);
        c.sam_heads = opt_int(*s, "heads", c.sam_heads, where);
        c.sam_global_layers = opt_ints(*s, "global_attn_indexes", c.sam_global_layers, where);
        c.sam_downsample = opt_ints(*s, "downsample_channels", c.sam_downsample, where);
        c.sam_window = opt_int(*s, "window_size", c.sam_window, where);
        c.sam_patch = opt_int(*s, "patch_size", c.sam_patch, where);
        c.sam_image = opt_int(*s, "image_size", c.sam_image, where);
        c.sam_neck = opt_int(*s, "out_chans", c.sam_neck, where);
        c.sam_mlp = c.sam_width * opt_int(*s, "mlp_ratio", 4, where);
      }
      for (auto it = w->begin(); it != w->end(); ++it) {
        if (it.key().rfind("clip", 0) != 0 || !it->is_object()) continue;
        const std::string where = "vision_config.width." + it.key();
        c.clip_width = opt_int(*it, "width", c.clip_width, where);
        c.clip_layers = opt_int(*it, "layers", c.clip_layers, where);
        c.clip_heads = opt_int(*it, "heads", c.clip_heads, where);
        c.clip_mlp = opt_int(*it, "ffn_hidden_size", c.clip_mlp, where);
        break;
      }
    }
  }
  if (auto p = root.find("projector_config"); p != root.end() && p->is_object()) {
    c.n_embed = opt_int(*p, "n_embed", c.n_embed, "projector_config");
    int64_t input = opt_int(*p, "input_dim", c.clip_width + c.sam_channels(), "projector_config");
    if (input != c.clip_width + c.sam_channels())
      throw_invalid("config.json: projector_config.input_dim " + std::to_string(input) + " is not CLIP width + SAM channels (" +
                    std::to_string(c.clip_width + c.sam_channels()) + ")");
  }
  c.validate();
  return c;
}

VisionConfig VisionConfig::from_hf_file(const std::string& path) { return from_hf_json(read_json_file(path)); }

}  // namespace folio
