// The KV options every command that decodes shares: the policy (--policy, --window, --sparse-top-k,
// --sparse-unit, --resident-pages) and the storage types (--kv-dtype and its per-part overrides).
#pragma once

#include <string>

#include "kv/kv_layout.h"
#include "kv/kv_policy.h"
#include "runtime/ocr_pipeline.h"

namespace CLI {
class App;
}

namespace folio::cli {

struct KVOptions {
  std::string all = "bf16", k, v, window;
  bool rotate = false;      // --kv-rotate
  std::string offload_dir;  // tiered reference: "" = the pool holds everything
  size_t hot_bytes = size_t{64} << 20, cold_bytes = size_t{64} << 30;
  // InvalidInput naming the option when a name is unknown.
  KVTypes types() const;
  // Sets an OCR run's storage types and tiered reference from these options.
  void apply(OcrOptions& opt) const;
};

// Registers --kv-dtype, --kv-dtype-k, --kv-dtype-v, --kv-dtype-window and, with `tiers`,
// --kv-offload, --kv-hot-bytes and --kv-cold-bytes on `app`.
void add_kv_options(CLI::App& app, KVOptions& o, bool tiers = false);

struct PolicyOptions {
  std::string name = "rswa";
  int64_t window = 128, top_k = 8, unit_tokens = 64, focus_pages = 1, resident_pages = 4, neighbour_pages = -1;
  double keep = 1.0;     // --kv-keep
  int64_t observe = 32;  // --kv-observe
  // InvalidInput naming the option when a value is out of range.
  KVPolicy policy() const;
};

// Registers --policy, --window, --sparse-top-k, --sparse-unit, --sparse-focus-pages,
// --resident-pages, --kv-keep and --kv-observe on `app`.
void add_policy_options(CLI::App& app, PolicyOptions& o);

}  // namespace folio::cli
