#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmdline/commands.h"
#include "core/error.h"
#include "io/json_file.h"
#include "runtime/decoder_gguf_export.h"
#include "vision/mmproj.h"
#include "runtime/loaded_model.h"

namespace folio::cli {

Runner add_convert(CLI::App& app) {
  struct Args {
    std::string model, out, mmproj_out, type = "bf16";
  };
  auto a = std::make_shared<Args>();
  app.add_option("--model", a->model, "Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json)")->required();
  app.add_option("--out", a->out, "The text-model GGUF to write (llama.cpp's deepseek2-ocr layout)")->required();
  app.add_option("--mmproj-out", a->mmproj_out,
                 "Also write the vision tower as llama.cpp's mmproj GGUF (bf16 matrices, f32 for --type f32, f16 for f16)");
  app.add_option("--type", a->type, std::string("Tensor types, as llama.cpp names file types: ") + gguf_export_types())
      ->capture_default_str();
  return [a]() -> int {
    namespace fs = std::filesystem;
    if (!fs::is_directory(a->model)) throw_invalid("--model: '" + a->model + "' is not a checkpoint directory");
    const fs::path tok = fs::path(a->model) / "tokenizer.json";
    if (!fs::exists(tok)) throw_invalid("--model: '" + a->model + "' has no tokenizer.json");
    if (!is_gguf_export_type(a->type))
      throw_invalid("--type: unknown GGUF type '" + a->type + "' (one of " + gguf_export_types() + ")");
    set_checkpoint_residency(Residency::kMapped);  // every tensor is read once: a copy would only cost
    LoadedModel m = load_model(a->model, false);
    const std::string name = fs::path(a->model).filename().empty() ? fs::path(a->model).parent_path().filename().string()
                                                                   : fs::path(a->model).filename().string();
    if (!a->mmproj_out.empty()) {
      const VisionConfig vcfg = VisionConfig::from_hf_file((fs::path(a->model) / "config.json").string());
      const DType matrices = a->type == "f32" ? DType::F32 : a->type == "f16" ? DType::F16 : DType::BF16;
      write_mmproj_gguf(vcfg, *m.weights, matrices, a->mmproj_out, name);
      std::printf("wrote %s: the vision tower, %s matrices\n", a->mmproj_out.c_str(), dtype_name(matrices));
    }
    GgufExportSummary s = write_decoder_gguf(m.config, *m.weights, read_json_file(tok.string()), a->type, a->out, name);
    std::printf("wrote %s: %.1f MB of tensors;", a->out.c_str(), s.tensor_bytes / 1e6);
    for (const auto& [dtype, n] : s.tensors_by_type) std::printf(" %s %lld", dtype_name(dtype), static_cast<long long>(n));
    std::printf("\n");
    return 0;
  };
}

}  // namespace folio::cli
