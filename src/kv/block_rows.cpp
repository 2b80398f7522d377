#include "kv/block_rows.h"

#include <algorithm>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/attention.h"

namespace folio {

using kernels::kv_quantized;
using kernels::kv_row_bytes;

namespace {

// Where channel run [c, c + n) of a token's value row lives: the head holding channel c, and the
// run's length within that head (value groups may span heads; codes of consecutive channels are
// contiguous in bytes, q4 included, as groups and heads hold an even number of channels).
struct HeadRun {
  int64_t head, in_head, n;
};
HeadRun head_run(int64_t c, int64_t group_end, int64_t head_dim) {
  const int64_t h = c / head_dim, in_head = c % head_dim;
  return {h, in_head, std::min(head_dim - in_head, group_end - c)};
}

uint8_t* value_codes(const KVBlock& b, int64_t head, int64_t row, int64_t head_dim) {
  return b.v + static_cast<size_t>(head) * b.v_head_stride + static_cast<size_t>(row) * kv_row_bytes(b.v_type, head_dim);
}

uint8_t* key_codes(const KVBlock& b, int64_t head, int64_t row, int64_t head_dim) {
  return b.k + static_cast<size_t>(head) * b.k_head_stride + static_cast<size_t>(row) * kv_row_bytes(b.k_type, head_dim);
}

// Keys quantised per token (b.k_param_stride > 0): head h of row r, in segments of
// kv_token_key_group channels, each with its parameters (kv_layout.h).
void quantize_token_key(const KVLayout& lay, const KVBlock& b, const float* x, int64_t h, int64_t r) {
  const int64_t D = lay.head_dim, g = kernels::kv_token_key_group(D), segs = D / g, np = kernels::kv_params_per_group(b.k_type);
  uint8_t* codes = key_codes(b, h, r, D);
  for (int64_t j = 0; j < segs; ++j)
    kernels::quantize_value_group(b.k_type, x + j * g, g, codes + kv_row_bytes(b.k_type, j * g),
                                  b.k_params + static_cast<size_t>(r) * b.k_param_stride + (h * segs + j) * np);
}

}  // namespace

void read_key_rows(const KVLayout& lay, const KVBlock& b, int64_t rows, float* k) {
  const int64_t D = lay.head_dim, np_k = kernels::kv_params_per_group(b.k_type), g = kernels::kv_token_key_group(D);
  for (int64_t h = 0; h < lay.n_kv_heads; ++h) {
    const uint8_t* src = b.k + static_cast<size_t>(h) * b.k_head_stride;
    float* out = k + h * rows * D;
    if (kv_quantized(b.k_type) && b.k_param_stride)
      kernels::dequantize_token_rows(b.k_type, src, kv_row_bytes(b.k_type, D), b.k_params, b.k_param_stride, h * D / g, g, rows, D, out);
    else if (kv_quantized(b.k_type)) kernels::dequantize_key_rows(b.k_type, src, b.k_params + h * np_k * D, rows, D, out);
    else convert_to_f32(kernels::kv_float_dtype(b.k_type), src, out, rows * D);
  }
}

void read_block_rows(const KVLayout& lay, const KVBlock& b, int64_t rows, float* k, float* v) {
  const int64_t H = lay.n_kv_heads, D = lay.head_dim, vg = lay.value_group();
  const int64_t np_v = kernels::kv_params_per_group(b.v_type);
  read_key_rows(lay, b, rows, k);
  if (!kv_quantized(b.v_type)) {
    for (int64_t h = 0; h < H; ++h)
      convert_to_f32(kernels::kv_float_dtype(b.v_type), b.v + static_cast<size_t>(h) * b.v_head_stride, v + h * rows * D, rows * D);
    return;
  }
  const int64_t groups = lay.row_elems() / vg;
  std::vector<uint8_t> codes(kv_row_bytes(KVDType::Q8, vg));
  std::vector<float> row(static_cast<size_t>(vg));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t c = g * vg; c < (g + 1) * vg;) {  // gather the group's codes from the heads it covers
        const HeadRun run = head_run(c, (g + 1) * vg, D);
        std::copy_n(value_codes(b, run.head, r, D) + kv_row_bytes(b.v_type, run.in_head), kv_row_bytes(b.v_type, run.n),
                    codes.data() + kv_row_bytes(b.v_type, c - g * vg));
        c += run.n;
      }
      kernels::dequantize_value_group(b.v_type, codes.data(), b.v_params + (r * groups + g) * np_v, vg, row.data());
      for (int64_t c = g * vg; c < (g + 1) * vg; ++c) v[(c / D) * rows * D + r * D + c % D] = row[static_cast<size_t>(c - g * vg)];
    }
}

void write_key_rows(const KVLayout& lay, const float* k, int64_t rows, const KVBlock& d) {
  const int64_t D = lay.head_dim;
  for (int64_t h = 0; h < lay.n_kv_heads; ++h) {
    uint8_t* out = d.k + static_cast<size_t>(h) * d.k_head_stride;
    if (kv_quantized(d.k_type) && d.k_param_stride)
      for (int64_t r = 0; r < rows; ++r) quantize_token_key(lay, d, k + (h * rows + r) * D, h, r);
    else if (kv_quantized(d.k_type))
      kernels::quantize_key_group(d.k_type, k + h * rows * D, rows, D, out, d.k_params + h * kernels::kv_params_per_group(d.k_type) * D);
    else
      convert_from_f32(kernels::kv_float_dtype(d.k_type), k + h * rows * D, out, rows * D);
  }
}

void write_key_row(const KVLayout& lay, const float* k, int64_t r, const KVBlock& d) {
  const int64_t D = lay.head_dim;
  if (kv_quantized(d.k_type) && !d.k_param_stride)
    throw Error(Error::Kind::Internal, "keys scaled per channel are quantised a whole group at a time, not row by row");
  for (int64_t h = 0; h < lay.n_kv_heads; ++h) {
    if (kv_quantized(d.k_type)) quantize_token_key(lay, d, k + h * D, h, r);
    else convert_from_f32(kernels::kv_float_dtype(d.k_type), k + h * D, key_codes(d, h, r, D), D);
  }
}

void write_block_rows(const KVLayout& lay, const float* k, const float* v, int64_t rows, const KVBlock& d) {
  const int64_t H = lay.n_kv_heads, D = lay.head_dim;
  write_key_rows(lay, k, rows, d);
  if (!kv_quantized(d.v_type)) {
    for (int64_t h = 0; h < H; ++h)
      convert_from_f32(kernels::kv_float_dtype(d.v_type), v + h * rows * D, d.v + static_cast<size_t>(h) * d.v_head_stride, rows * D);
    return;
  }
  // Values: per token (head-major rows gathered into one token row each).
  std::vector<float> row(static_cast<size_t>(lay.row_elems()));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < H; ++h) std::copy_n(v + h * rows * D + r * D, D, row.data() + h * D);
    write_value_row(lay, row.data(), r, d);
  }
}

void write_value_row(const KVLayout& lay, const float* v, int64_t r, const KVBlock& d) {
  const int64_t D = lay.head_dim;
  if (!kv_quantized(d.v_type)) {
    for (int64_t h = 0; h < lay.n_kv_heads; ++h) convert_from_f32(kernels::kv_float_dtype(d.v_type), v + h * D, value_codes(d, h, r, D), D);
    return;
  }
  // In groups of vg channels that may span heads.
  const int64_t vg = lay.value_group(), groups = lay.row_elems() / vg, np = kernels::kv_params_per_group(d.v_type);
  thread_local std::vector<uint8_t> codes;
  codes.resize(kv_row_bytes(KVDType::Q8, vg));
  for (int64_t g = 0; g < groups; ++g) {
    kernels::quantize_value_group(d.v_type, v + g * vg, vg, codes.data(), d.v_params + (r * groups + g) * np);
    for (int64_t c = g * vg; c < (g + 1) * vg;) {  // scatter the group's codes to the heads it covers
      const HeadRun run = head_run(c, (g + 1) * vg, D);
      std::copy_n(codes.data() + kv_row_bytes(d.v_type, c - g * vg), kv_row_bytes(d.v_type, run.n),
                  value_codes(d, run.head, r, D) + kv_row_bytes(d.v_type, run.in_head));
      c += run.n;
    }
  }
}

void copy_value_rows(const KVLayout& lay, const KVBlock& s, int64_t rows, const KVBlock& d) {
  const int64_t D = lay.head_dim;
  for (int64_t h = 0; h < lay.n_kv_heads; ++h)
    std::copy_n(value_codes(s, h, 0, D), static_cast<size_t>(rows) * kv_row_bytes(s.v_type, D), value_codes(d, h, 0, D));
  if (!kv_quantized(s.v_type)) return;
  const int64_t per_row = lay.row_elems() / lay.value_group() * kernels::kv_params_per_group(s.v_type);
  std::copy_n(s.v_params, rows * per_row, d.v_params);
}

void read_segment_rows(const KVLayout& lay, int64_t bt, int64_t len, const std::function<KVBlock(size_t)>& block,
                       std::vector<float>& k, std::vector<float>& v) {
  const int64_t H = lay.n_kv_heads, D = lay.head_dim;
  k.resize(static_cast<size_t>(H * len * D));
  v.resize(k.size());
  std::vector<float> bk(static_cast<size_t>(H * bt * D)), bv(bk.size());
  for (int64_t i = 0; i * bt < len; ++i) {
    const int64_t rows = std::min(bt, len - i * bt);
    read_block_rows(lay, block(static_cast<size_t>(i)), rows, bk.data(), bv.data());
    for (int64_t h = 0; h < H; ++h) {
      std::copy_n(bk.begin() + h * rows * D, rows * D, k.begin() + (h * len + i * bt) * D);
      std::copy_n(bv.begin() + h * rows * D, rows * D, v.begin() + (h * len + i * bt) * D);
    }
  }
}

std::vector<int64_t> write_kept_rows(KVBlockPool& pool, SeqId seq, int64_t layer, int64_t bt, int64_t len,
                                     const std::vector<std::vector<int64_t>>& keep, const std::vector<float>& k,
                                     const std::vector<float>& v) {
  const KVLayout& lay = pool.layout();
  const int64_t H = lay.n_kv_heads, D = lay.head_dim;
  const auto n = static_cast<int64_t>(keep[0].size());
  std::vector<int64_t> out;
  std::vector<float> bk(static_cast<size_t>(H * bt * D)), bv(bk.size());
  for (int64_t i = 0; i * bt < n; ++i) {
    const int64_t rows = std::min(bt, n - i * bt);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = (h * len + keep[static_cast<size_t>(h)][static_cast<size_t>(i * bt + r)]) * D, dst = (h * rows + r) * D;
        std::copy_n(k.begin() + src, D, bk.begin() + dst);
        std::copy_n(v.begin() + src, D, bv.begin() + dst);
      }
    // Blocks of just the rows they hold (the last one is short; nothing is appended to a compressed
    // segment), as a quantised segment's last group is.
    const int64_t id = pool.allocate(seq, layer, rows);
    write_block_rows(lay, bk.data(), bv.data(), rows, pool.block(id));
    out.push_back(id);
  }
  return out;
}

kernels::KVSpan block_span(const KVLayout& lay, const KVBlock& b, int64_t first_row, int64_t rows) {
  const int64_t D = lay.head_dim, vg = lay.value_group();
  const auto first = static_cast<size_t>(first_row);
  kernels::KVSpan sp;
  sp.k = b.k + first * kernels::kv_row_bytes(b.k_type, D);
  sp.v = b.v + first * kernels::kv_row_bytes(b.v_type, D);
  sp.tokens = rows;
  sp.k_head_stride = b.k_head_stride;
  sp.v_head_stride = b.v_head_stride;
  sp.k_type = b.k_type;
  sp.v_type = b.v_type;
  // Keys quantised per token (the window) carry their parameters per row, as values do.
  sp.k_param_stride = b.k_param_stride;
  sp.k_params = b.k_params + first * b.k_param_stride;
  sp.k_group = kernels::kv_token_key_group(D);
  sp.v_param_stride = static_cast<size_t>(lay.row_elems() / vg * kernels::kv_params_per_group(b.v_type));
  sp.v_params = b.v_params + first * sp.v_param_stride;
  sp.v_group = vg;
  return sp;
}

size_t span_bytes(const KVLayout& lay, const kernels::KVSpan& s) {
  const auto H = static_cast<size_t>(lay.n_kv_heads), D = static_cast<size_t>(lay.head_dim), T = static_cast<size_t>(s.tokens);
  const size_t key_group_params = s.k_param_stride ? 0 : H * static_cast<size_t>(kernels::kv_params_per_group(s.k_type)) * D * 2;
  return T * H * (kernels::kv_row_bytes(s.k_type, lay.head_dim) + kernels::kv_row_bytes(s.v_type, lay.head_dim)) + key_group_params +
         T * (s.k_param_stride + s.v_param_stride) * 2;
}

}  // namespace folio
