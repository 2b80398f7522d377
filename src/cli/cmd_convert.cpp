#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "model/io/json_file.h"
#include "runtime/decoder_gguf_export.h"
#include "runtime/loaded_model.h"

namespace folio::cli {

Runner add_convert(CLI::App& app) {
  struct Args {
    std::string model, out, type = "bf16";
  };
  auto a = std::make_shared<Args>();
  app.add_option("--model", a->model, "Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json)")->required();
  app.add_option("--out", a->out, "The text-model GGUF to write (llama.cpp's deepseek2-ocr layout)")->required();
  app.add_option("--type", a->type, std::string("Tensor types, as llama.cpp names file types: ") + gguf_export_types())
      ->capture_default_str();
  return [a]() -> int {
    namespace fs = std::filesystem;
    if (!fs::is_directory(a->model)) throw_invalid("--model: '" + a->model + "' is not a checkpoint directory");
    const fs::path tok = fs::path(a->model) / "tokenizer.json";
    if (!fs::exists(tok)) throw_invalid("--model: '" + a->model + "' has no tokenizer.json");
    LoadedModel m = load_model(a->model, false);
    const std::string name = fs::path(a->model).filename().empty() ? fs::path(a->model).parent_path().filename().string()
                                                                   : fs::path(a->model).filename().string();
    GgufExportSummary s = write_decoder_gguf(m.config, *m.weights, read_json_file(tok.string()), a->type, a->out, name);
    std::printf("wrote %s: %.1f MB of tensors;", a->out.c_str(), s.tensor_bytes / 1e6);
    for (const auto& [dtype, n] : s.tensors_by_type) std::printf(" %s %lld", dtype_name(dtype), static_cast<long long>(n));
    std::printf("\n");
    return 0;
  };
}

}  // namespace folio::cli
