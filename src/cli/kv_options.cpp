#include "cli/kv_options.h"

#include <CLI/CLI.hpp>

#include "kv/kv_dtype.h"

namespace folio::cli {

KVTypes KVOptions::types() const { return parse_kv_types(all, k, v, window); }

void add_kv_options(CLI::App& app, KVOptions& o) {
  app.add_option("--kv-dtype", o.all, "KV storage: f32, f16, bf16, q8 or q4 (keys and values, reference and window)")
      ->capture_default_str();
  app.add_option("--kv-dtype-k", o.k, "Keys only: f32, f16, bf16, q8 or q4 (overrides --kv-dtype)");
  app.add_option("--kv-dtype-v", o.v, "Values only: f32, f16, bf16, q8 or q4 (overrides --kv-dtype)");
  app.add_option("--kv-dtype-window", o.window,
                 "Generated tokens of the window, keys and values (overrides the above for them)");
}

}  // namespace folio::cli
