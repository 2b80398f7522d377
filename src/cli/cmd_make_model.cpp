#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cmdline/commands.h"
#include "core/error.h"
#include "runtime/model_factory.h"

namespace folio::cli {

Runner add_make_model(CLI::App& app) {
  struct Args {
    std::string arch, preset = "tiny", out, dtype = "bf16";
    uint64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  app.add_option("--arch", a->arch, "llama, unlimited-ocr (vision tower + decoder) or unlimited-ocr-decoder")->required();
  app.add_option("--preset", a->preset, "tiny (tests), tiny-k (unlimited-ocr-decoder with 256-wide rows, for GGUF K formats) or full (the real shapes, for speed)")->capture_default_str();
  app.add_option("--seed", a->seed, "Random seed")->capture_default_str();
  app.add_option("--dtype", a->dtype, "Weight dtype: f32, f16 or bf16")->capture_default_str();
  app.add_option("--out", a->out, "Output directory")->required();
  return [a]() -> int {
    auto dt = parse_dtype(a->dtype);
    if (!dt) throw_invalid("--dtype: unknown dtype '" + a->dtype + "'");
    ModelConfig cfg = preset_config(a->arch, a->preset);
    write_random_checkpoint(cfg, preset_vision_config(a->arch, a->preset), a->out, a->seed, *dt);
    std::printf("wrote %s %s checkpoint (%s weights, seed %llu) to %s\n", a->arch.c_str(), a->preset.c_str(),
                dtype_name(*dt), static_cast<unsigned long long>(a->seed), a->out.c_str());
    return 0;
  };
}

}  // namespace folio::cli
