// Random-weight checkpoints in the published layouts, for tests and speed benchmarks.
//
// `folio make-model` writes config.json + model.safetensors + tokenizer.json exactly as the real
// checkpoints name and shape them, so everything that loads a user's checkpoint loads these too.
// The "unlimited-ocr" architecture is the whole OCR model: the DeepEncoder (SAM + CLIP + projector,
// official tensor names) and the decoder in one safetensors file, and a config.json laid out like
// the published one (language_config, vision_config, projector_config, plus the language keys
// repeated at the top level).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "model/model_config.h"
#include "vision/vision_config.h"

namespace folio {

// arch: "llama", "unlimited-ocr-decoder" or "unlimited-ocr" (its decoder); preset: "tiny" or "full".
ModelConfig preset_config(const std::string& arch, const std::string& preset);

// The vision tower of an arch that has one ("unlimited-ocr"), nullopt otherwise. full: the
// published DeepEncoder; tiny: the same structure shrunk to a few hundred thousand parameters
// (projector output = the tiny decoder's hidden size) so tests can encode pages in a fraction of a
// second.
std::optional<VisionConfig> preset_vision_config(const std::string& arch, const std::string& preset);

// Writes a random checkpoint for `cfg` into out_dir (created if needed). Weights are drawn from a
// seeded generator (same seed, same bytes), stored as `dtype` (f32, f16 or bf16).
void write_random_checkpoint(const ModelConfig& cfg, const std::string& out_dir, uint64_t seed, DType dtype);

// The same with a vision tower (when `vision` is set): its tensors join the decoder's in
// model.safetensors, config.json takes the published Unlimited-OCR layout, and tokenizer.json gets
// an "<image>" special token (id 128815 when the vocabulary is that large, else the last id).
void write_random_checkpoint(const ModelConfig& cfg, const std::optional<VisionConfig>& vision, const std::string& out_dir,
                             uint64_t seed, DType dtype);

}  // namespace folio
