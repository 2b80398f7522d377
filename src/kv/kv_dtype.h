// The dtypes KV blocks are stored in, chosen by name on the command line or in the server config.
#pragma once

#include <string>

#include "core/dtype.h"

namespace folio {

// f32, f16 or bf16 by name; anything else (including q8_0, a weight format) is InvalidInput
// "<option> must be f32, f16 or bf16, got '<name>'".
DType parse_kv_dtype(const std::string& name, const std::string& option);

}  // namespace folio
