// Random-weight checkpoints in the published layouts, for tests and speed benchmarks.
//
// `folio make-model` writes config.json + model.safetensors + tokenizer.json exactly as the real
// checkpoints name and shape them, so everything that loads a user's checkpoint loads these too.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "model/model_config.h"

namespace folio {

// arch: "llama" or "unlimited-ocr-decoder"; preset: "tiny" or "full".
ModelConfig preset_config(const std::string& arch, const std::string& preset);

// Writes a random checkpoint for `cfg` into out_dir (created if needed). Weights are drawn from a
// seeded generator (same seed, same bytes), stored as `dtype` (f32, f16 or bf16).
void write_random_checkpoint(const ModelConfig& cfg, const std::string& out_dir, uint64_t seed, DType dtype);

}  // namespace folio
