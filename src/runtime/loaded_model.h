// LoadedModel: a checkpoint opened from the user's files, ready to run.
//
// Accepts a Hugging Face directory (config.json + model.safetensors or a sharded index, plus
// tokenizer.json) or a single .gguf file (tokenizer read from its metadata). Nothing is converted:
// weights are used in their stored dtype, read into huge-page memory or mapped (checkpoint_residency).
#pragma once

#include <memory>
#include <string>

#include "model/decoder.h"
#include "io/mapped_file.h"
#include "io/tensor_source.h"
#include "model/model_config.h"
#include "text/tokenizer.h"

namespace folio {

struct LoadedModel {
  std::string path;
  std::string format;  // "safetensors" or "gguf"
  ModelConfig config;
  std::unique_ptr<TensorSource> weights;
  std::unique_ptr<TensorSource> quantized;  // the decoder's view of `weights` under --weights, if set
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Tokenizer> tokenizer;  // null only when loading with need_tokenizer = false
};

// `weights` (optional): a scheme of model/quantized_weights.h ("q8_0", "q4_k_m", ...) in which the
// decoder's linears are re-stored at load; "" keeps the checkpoint's types.
// Throws Error(InvalidInput) naming the missing or broken file or tensor, or the unknown scheme.
LoadedModel load_model(const std::string& path, bool need_tokenizer = true, const std::string& weights = "");

// How load_model holds the checkpoint's files when the decoder uses them in place: resident by
// default (a decode step streams every active weight, and huge pages spare it a TLB miss per
// 4 KiB), mapped under `folio --mmap` or serve's model.mmap (opens at once, shares the page cache
// between processes). With a `weights` scheme the files are only read to re-store the linears, so
// they stay mapped whatever this says. Process-wide; set it before loading, from one thread.
void set_checkpoint_residency(Residency residency);
Residency checkpoint_residency();

}  // namespace folio
