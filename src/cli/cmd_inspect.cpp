#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>

#include "cmdline/commands.h"
#include "core/row_interleave.h"
#include "kv/kv_layout.h"
#include "runtime/loaded_model.h"

namespace folio::cli {

Runner add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto tensors = std::make_shared<bool>(false);
  auto weights = std::make_shared<std::string>();
  app.add_option("--model", *path, "Checkpoint directory or .gguf file")->required();
  app.add_flag("--tensors", *tensors, "List every tensor with dtype and shape");
  app.add_option("--weights", *weights, "Show the model as --weights SCHEME would run it (q8_0, q4_k_m, ...)");
  return [path, tensors, weights]() -> int {
    set_checkpoint_residency(Residency::kMapped);  // reads headers and a few tensors: no copy of the whole file
    LoadedModel m = load_model(*path, false, *weights);
    const TensorSource& src = m.quantized ? *m.quantized : *m.weights;
    const ModelConfig& c = m.config;
    std::printf("path: %s\nformat: %s\narchitecture: %s (model_type %s)\n", m.path.c_str(), m.format.c_str(),
                c.arch_name().c_str(), c.model_type.c_str());
    std::printf("layers: %lld  hidden: %lld  heads: %lld  kv_heads: %lld  head_dim: %lld\n", (long long)c.n_layers,
                (long long)c.hidden, (long long)c.n_heads, (long long)c.n_kv_heads, (long long)c.head_dim);
    if (c.n_routed > 0)
      std::printf("moe: %lld routed experts (width %lld), top-%lld, %lld shared, first %lld layers dense (width %lld)\n",
                  (long long)c.n_routed, (long long)c.moe_intermediate, (long long)c.top_k, (long long)c.n_shared,
                  (long long)c.first_k_dense, (long long)c.intermediate);
    else
      std::printf("mlp: width %lld\n", (long long)c.intermediate);
    std::printf("vocab: %lld  context: %lld  rope_theta: %g  rms_eps: %g  sliding_window: %lld\n", (long long)c.vocab,
                (long long)c.max_positions, c.rope_theta, c.rms_eps, (long long)c.sliding_window);
    std::printf("parameters: %lld (%.3f B)  weight bytes: %zu\n", (long long)m.decoder->parameter_count(),
                m.decoder->parameter_count() / 1e9, m.decoder->weight_bytes());
    std::printf("active weight bytes per token: %zu\n", m.decoder->active_weight_bytes_per_token());
    for (KVDType d : {KVDType::F32, KVDType::BF16, KVDType::F16, KVDType::Q8, KVDType::Q4})
      std::printf("kv bytes per token (%s): %.1f\n", kernels::kv_dtype_name(d),
                  m.decoder->kv_layout(KVTypes::uniform(d)).reference_bytes_per_token());
    auto names = src.names();
    std::printf("tensors: %zu\n", names.size());
    // Formats by their rows' format: rows interleaved in memory (core/row_interleave.h) are the
    // same weights, bytes and format as the file's.
    std::map<std::string, std::pair<int, size_t>> formats;  // dtype -> tensors, bytes
    for (const auto& n : names) {
      const TensorView& t = src.get(n);
      formats[dtype_name(row_dtype(t.dtype))].first += 1;
      formats[dtype_name(row_dtype(t.dtype))].second += t.nbytes();
    }
    std::printf("weight formats:");
    for (const auto& [name, count] : formats) std::printf(" %s %d tensors %zu bytes;", name.c_str(), count.first, count.second);
    std::printf("\n");
    if (*tensors)
      for (const auto& n : names) {
        const TensorView& t = src.get(n);
        std::printf("  %s %s %s %zu bytes\n", n.c_str(), dtype_name(row_dtype(t.dtype)), shape_to_string(t.shape).c_str(),
                    t.nbytes());
      }
    return 0;
  };
}

}  // namespace folio::cli
