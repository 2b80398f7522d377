#include "vision/mini_ocr_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kernels/cpu/conv2d.h"

namespace folio {

using json = nlohmann::json;

int64_t MiniOcrConfig::band_out_height() const {
  int64_t h = line_pitch;
  for (const auto& s : conv_strides) h = kernels::conv_out_size(h, 3, s[0], 1);
  return h;
}

int64_t MiniOcrConfig::frames_per_row() const {
  int64_t w = image_width;
  for (const auto& s : conv_strides) w = kernels::conv_out_size(w, 3, s[1], 1);
  return w;
}

void MiniOcrConfig::validate() const {
  auto pos = [](int64_t v, const char* key) {
    if (v <= 0) throw_invalid(std::string("mini OCR config: vision_config.") + key + " must be positive");
  };
  pos(image_width, "image_width");
  pos(image_height, "image_height");
  pos(line_pitch, "line_pitch");
  pos(rows, "rows");
  pos(frame_hidden, "frame_hidden");
  pos(ctc_vocab, "ctc_vocab");
  pos(max_rows, "max_rows");
  pos(max_chars, "max_chars");
  pos(max_pages, "max_pages");
  pos(page_code_period, "page_code_period");
  if (page_code_period > max_pages) throw_invalid("mini OCR config: vision_config.page_code_period exceeds max_pages");
  pos(hidden, "hidden");
  if (pixel_std <= 0) throw_invalid("mini OCR config: vision_config.pixel_std must be positive");
  if (margin_top < 0 || margin_top + rows * line_pitch > image_height)
    throw_invalid("mini OCR config: vision_config.rows x line_pitch from margin_top does not fit image_height");
  if (conv_channels.empty() || conv_channels.size() != conv_strides.size())
    throw_invalid("mini OCR config: vision_config.conv_channels and conv_strides must be non-empty and of equal length");
  for (size_t i = 0; i < conv_channels.size(); ++i) {
    pos(conv_channels[i], "conv_channels");
    pos(conv_strides[i][0], "conv_strides");
    pos(conv_strides[i][1], "conv_strides");
  }
  if (context_layers < 0 || context_kernel < 1 || context_kernel % 2 == 0)
    throw_invalid("mini OCR config: vision_config.context_kernel must be odd and context_layers >= 0");
  if (band_out_height() < 1 || frames_per_row() < 1) throw_invalid("mini OCR config: the convolutions leave nothing of a band");
}

MiniOcrConfig MiniOcrConfig::from_hf_json(const json& root) {
  if (!root.contains("vision_config") || !root["vision_config"].is_object())
    throw_invalid("mini OCR config.json has no \"vision_config\" object");
  const json& v = root["vision_config"];
  MiniOcrConfig c;
  auto get = [&](const char* key, auto& field) {
    if (!v.contains(key)) return;
    try {
      v.at(key).get_to(field);
    } catch (const json::exception&) {
      throw_invalid(std::string("mini OCR config: vision_config.") + key + " has the wrong type");
    }
  };
  get("image_width", c.image_width);
  get("image_height", c.image_height);
  get("margin_top", c.margin_top);
  get("line_pitch", c.line_pitch);
  get("rows", c.rows);
  get("pixel_mean", c.pixel_mean);
  get("pixel_std", c.pixel_std);
  get("conv_channels", c.conv_channels);
  get("conv_strides", c.conv_strides);
  get("frame_hidden", c.frame_hidden);
  get("context_layers", c.context_layers);
  get("context_kernel", c.context_kernel);
  get("ctc_vocab", c.ctc_vocab);
  get("max_rows", c.max_rows);
  get("max_chars", c.max_chars);
  get("max_pages", c.max_pages);
  c.page_code_period = std::min<int64_t>(200, c.max_pages);  // the trained range, unless the config says
  get("page_code_period", c.page_code_period);
  if (root.contains("text_config") && root["text_config"].contains("hidden_size"))
    c.hidden = root["text_config"]["hidden_size"].get<int64_t>();
  c.validate();
  return c;
}

}  // namespace folio
