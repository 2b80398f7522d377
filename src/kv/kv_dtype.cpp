#include "kv/kv_dtype.h"

#include "core/error.h"

namespace folio {

DType parse_kv_dtype(const std::string& name, const std::string& option) {
  const auto d = parse_dtype(name);
  if (!d || dtype_is_block_quantized(*d)) throw_invalid(option + " must be f32, f16 or bf16, got '" + name + "'");
  return *d;
}

KVDType parse_kv_type(const std::string& name, const std::string& option) {
  const auto t = kernels::parse_kv_dtype_name(name);
  if (!t) throw_invalid(option + " must be f32, f16, bf16, q8 or q4, got '" + name + "'");
  return *t;
}

KVTypes parse_kv_types(const std::string& all, const std::string& k, const std::string& v, const std::string& window) {
  KVTypes t = KVTypes::uniform(all.empty() ? KVDType::F32 : parse_kv_type(all, "--kv-dtype"));
  if (!k.empty()) t.ref_k = t.win_k = parse_kv_type(k, "--kv-dtype-k");
  if (!v.empty()) t.ref_v = t.win_v = parse_kv_type(v, "--kv-dtype-v");
  if (!window.empty()) t.win_k = t.win_v = parse_kv_type(window, "--kv-dtype-window");
  return t;
}

}  // namespace folio
