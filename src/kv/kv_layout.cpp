#include "kv/kv_layout.h"

#include "kernels/cpu/hadamard.h"

#include "core/error.h"

namespace folio {

using kernels::kv_params_per_group;
using kernels::kv_quantized;
using kernels::kv_row_bytes;

std::string KVTypes::name() const {
  const std::string rot = rotated ? "+rotated" : "";
  if (ref_k == ref_v && ref_v == win_k && win_k == win_v) return kernels::kv_dtype_name(ref_k) + rot;
  std::string s = std::string("k=") + kernels::kv_dtype_name(ref_k) + ",v=" + kernels::kv_dtype_name(ref_v);
  if (win_k != ref_k || win_v != ref_v)
    s += std::string(",window_k=") + kernels::kv_dtype_name(win_k) + ",window_v=" + kernels::kv_dtype_name(win_v);
  return s + rot;
}

KVLayout::KVLayout(int64_t layers, int64_t kv_heads, int64_t hd, KVTypes t)
    : n_layers(layers), n_kv_heads(kv_heads), head_dim(hd), types(t) {
  if (t.rotated && !kernels::is_power_of_two(hd))
    throw_invalid("rotated KV needs a power-of-two head_dim (the Walsh-Hadamard transform), got " + std::to_string(hd));
  for (KVDType d : {t.ref_k, t.ref_v, t.win_k, t.win_v})
    if (d == KVDType::Q4 && (hd % 2 != 0 || value_group() % 2 != 0))
      throw_invalid("q4 KV needs an even head_dim, got " + std::to_string(hd));
}

namespace {
size_t align64(size_t n) { return (n + 63) / 64 * 64; }
}  // namespace

KVBlockGeometry KVLayout::geometry(KVDType k, KVDType v, int64_t tokens, KeyScales ks) const {
  KVBlockGeometry g;
  const auto T = static_cast<size_t>(tokens), H = static_cast<size_t>(n_kv_heads), D = static_cast<size_t>(head_dim);
  g.k_head_stride = T * kv_row_bytes(k, head_dim);
  g.v_head_stride = T * kv_row_bytes(v, head_dim);
  size_t at = align64(H * g.k_head_stride);
  g.k_params = at;
  if (kv_quantized(k) && ks == KeyScales::PerToken) {
    g.k_param_stride = H * D / static_cast<size_t>(kernels::kv_token_key_group(head_dim)) * static_cast<size_t>(kv_params_per_group(k));
    at = align64(at + T * g.k_param_stride * 2);
  } else if (kv_quantized(k)) {
    at = align64(at + H * static_cast<size_t>(kv_params_per_group(k)) * D * 2);
  }
  g.v = at;
  at = align64(at + H * g.v_head_stride);
  g.v_params = at;
  if (kv_quantized(v))
    at = align64(at + T * static_cast<size_t>(row_elems() / value_group() * kv_params_per_group(v)) * 2);
  g.bytes = at;
  return g;
}

double KVLayout::reference_bytes_per_token() const {
  const int64_t group = kernels::kKVKeyGroup;
  return static_cast<double>(block_bytes(types.ref_k, types.ref_v, group)) * static_cast<double>(n_layers) /
         static_cast<double>(group);
}

}  // namespace folio
