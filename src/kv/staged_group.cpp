#include "kv/staged_group.h"

#include <algorithm>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/attention.h"

namespace folio {

using kernels::kv_quantized;
using kernels::kv_row_bytes;

void quantize_staged_rows(const KVLayout& lay, const KVBlock& s, int64_t rows, const KVBlock& d) {
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, vg = lay.value_group();
  std::vector<float> x(static_cast<size_t>(rows * D)), row(static_cast<size_t>(lay.row_elems()));
  std::vector<uint8_t> codes(kv_row_bytes(KVDType::Q8, vg));
  const DType sk = kernels::kv_float_dtype(s.k_type), sv = kernels::kv_float_dtype(s.v_type);
  for (int64_t h = 0; h < H; ++h) {
    const uint8_t* src = s.k + static_cast<size_t>(h) * s.k_head_stride;
    uint8_t* out = d.k + static_cast<size_t>(h) * d.k_head_stride;
    if (kv_quantized(d.k_type)) {
      convert_to_f32(sk, src, x.data(), rows * D);
      kernels::quantize_key_group(d.k_type, x.data(), rows, D, out,
                                  d.k_params + h * kernels::kv_params_per_group(d.k_type) * D);
    } else {
      std::copy_n(src, static_cast<size_t>(rows) * kv_row_bytes(d.k_type, D), out);
    }
  }
  // Values: per token, in groups of vg channels that may span heads.
  const size_t svb = kv_row_bytes(s.v_type, D), dvb = kv_row_bytes(d.v_type, D);
  const int64_t groups = lay.row_elems() / vg, np = kernels::kv_params_per_group(d.v_type);
  for (int64_t r = 0; r < rows; ++r) {
    if (!kv_quantized(d.v_type)) {
      for (int64_t h = 0; h < H; ++h)
        std::copy_n(s.v + static_cast<size_t>(h) * s.v_head_stride + static_cast<size_t>(r) * svb, dvb,
                    d.v + static_cast<size_t>(h) * d.v_head_stride + static_cast<size_t>(r) * dvb);
      continue;
    }
    for (int64_t h = 0; h < H; ++h)
      convert_to_f32(sv, s.v + static_cast<size_t>(h) * s.v_head_stride + static_cast<size_t>(r) * svb,
                     row.data() + h * D, D);
    for (int64_t g = 0; g < groups; ++g) {
      kernels::quantize_value_group(d.v_type, row.data() + g * vg, vg, codes.data(),
                                    d.v_params + (r * groups + g) * np);
      // Scatter the group's codes to the head rows it covers (codes of consecutive channels are
      // contiguous in bytes, q4 included: groups and heads hold an even number of channels).
      for (int64_t c = g * vg; c < (g + 1) * vg;) {
        const int64_t h = c / D, in_head = c % D, n = std::min(D - in_head, (g + 1) * vg - c);
        const size_t off = kv_row_bytes(d.v_type, c - g * vg), len = kv_row_bytes(d.v_type, n);
        std::copy_n(codes.data() + off, len,
                    d.v + static_cast<size_t>(h) * d.v_head_stride + static_cast<size_t>(r) * dvb +
                        kv_row_bytes(d.v_type, in_head));
        c += n;
      }
    }
  }
}

}  // namespace folio
