// The KV storage options every command that decodes shares: --kv-dtype and its per-part overrides.
#pragma once

#include <string>

#include "kv/kv_layout.h"

namespace CLI {
class App;
}

namespace folio::cli {

struct KVOptions {
  std::string all = "bf16", k, v, window;
  // InvalidInput naming the option when a name is unknown.
  KVTypes types() const;
};

// Registers --kv-dtype, --kv-dtype-k, --kv-dtype-v and --kv-dtype-window on `app`.
void add_kv_options(CLI::App& app, KVOptions& o);

}  // namespace folio::cli
