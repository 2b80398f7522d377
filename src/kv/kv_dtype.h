// The types KV blocks are stored in, chosen by name on the command line or in the server config.
#pragma once

#include <string>

#include "core/dtype.h"
#include "kv/kv_layout.h"

namespace folio {

// f32, f16 or bf16 by name; anything else (including q8_0, a weight format) is InvalidInput
// "<option> must be f32, f16 or bf16, got '<name>'".
DType parse_kv_dtype(const std::string& name, const std::string& option);

// f32, f16, bf16, q8 or q4 by name; anything else is InvalidInput naming the option.
KVDType parse_kv_type(const std::string& name, const std::string& option);

// The storage types from the KV options: `all` for everything (default f32), then `k` / `v` for keys
// / values, then `window` for the window's keys and values. Empty strings are options not given.
// Option names in errors: --kv-dtype, --kv-dtype-k, --kv-dtype-v, --kv-dtype-window.
KVTypes parse_kv_types(const std::string& all, const std::string& k = "", const std::string& v = "",
                       const std::string& window = "");

}  // namespace folio
