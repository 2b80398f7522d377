#include "kv/kv_dtype.h"

#include "core/error.h"

namespace folio {

DType parse_kv_dtype(const std::string& name, const std::string& option) {
  const auto d = parse_dtype(name);
  if (!d || *d == DType::Q8_0) throw_invalid(option + " must be f32, f16 or bf16, got '" + name + "'");
  return *d;
}

}  // namespace folio
