#include "kernels/cpu/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

const char* kv_dtype_name(KVDType t) {
  switch (t) {
    case KVDType::F32: return "f32";
    case KVDType::F16: return "f16";
    case KVDType::BF16: return "bf16";
    case KVDType::Q8: return "q8";
    case KVDType::Q4: return "q4";
  }
  return "?";
}

std::optional<KVDType> parse_kv_dtype_name(std::string_view s) {
  std::string l(s);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "q8") return KVDType::Q8;
  if (l == "q4") return KVDType::Q4;
  if (l == "q8_0") return std::nullopt;  // a weight format, not a KV one
  if (auto d = parse_dtype(l)) return kv_from_dtype(*d);
  return std::nullopt;
}

DType kv_float_dtype(KVDType t) {
  switch (t) {
    case KVDType::F32: return DType::F32;
    case KVDType::F16: return DType::F16;
    case KVDType::BF16: return DType::BF16;
    default: break;
  }
  throw Error(Error::Kind::Internal, std::string("KV type ") + kv_dtype_name(t) + " is not a float type");
}

size_t kv_row_bytes(KVDType t, int64_t head_dim) {
  const auto n = static_cast<size_t>(head_dim);
  switch (t) {
    case KVDType::F32: return 4 * n;
    case KVDType::F16:
    case KVDType::BF16: return 2 * n;
    case KVDType::Q8: return n;
    case KVDType::Q4: return (n + 1) / 2;
  }
  return 0;
}

int64_t kv_value_group(int64_t row_elems, int64_t head_dim) {
  const int64_t g = kKVValueGroup;
  if (row_elems % g == 0 && (head_dim % g == 0 || g % head_dim == 0)) return g;
  return head_dim;
}

namespace {

// Quantises n values x[i * stride] with one group's scale (and min): writes codes through `put`.
struct GroupParams {
  float scale, min;
};

GroupParams group_params(KVDType t, const float* x, int64_t n, int64_t stride) {
  float lo = INFINITY, hi = -INFINITY, amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i * stride];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    amax = std::max(amax, std::fabs(v));
  }
  if (t == KVDType::Q8) return {amax / 127.f, 0.f};
  return {(hi - lo) / 15.f, lo};
}

// The scale and min as they will be read back (f16), so codes are chosen against those values.
GroupParams stored(GroupParams g, uint16_t& s16, uint16_t& m16) {
  s16 = f32_to_f16(g.scale);
  m16 = f32_to_f16(g.min);
  return {f16_to_f32(s16), f16_to_f32(m16)};
}

inline int code_of(KVDType t, float v, GroupParams g) {
  if (g.scale == 0.f) return 0;
  if (t == KVDType::Q8) return static_cast<int>(std::clamp(std::nearbyint(v / g.scale), -127.f, 127.f));
  return static_cast<int>(std::clamp(std::nearbyint((v - g.min) / g.scale), 0.f, 15.f));
}

inline void put_code(KVDType t, uint8_t* codes, int64_t i, int c) {
  if (t == KVDType::Q8) {
    codes[i] = static_cast<uint8_t>(static_cast<int8_t>(c));
  } else if (i % 2 == 0) {
    codes[i / 2] = static_cast<uint8_t>((codes[i / 2] & 0xf0) | c);
  } else {
    codes[i / 2] = static_cast<uint8_t>((codes[i / 2] & 0x0f) | (c << 4));
  }
}

inline float get_code(KVDType t, const uint8_t* codes, int64_t i) {
  if (t == KVDType::Q8) return static_cast<float>(static_cast<int8_t>(codes[i]));
  return static_cast<float>((codes[i / 2] >> ((i % 2) * 4)) & 0xf);
}

void check_quantized(KVDType t) {
  if (!kv_quantized(t)) throw Error(Error::Kind::Internal, std::string("KV type ") + kv_dtype_name(t) + " is not quantised");
}

}  // namespace

void quantize_key_group(KVDType t, const float* x, int64_t rows, int64_t head_dim, uint8_t* codes, uint16_t* params) {
  check_quantized(t);
  const size_t rb = kv_row_bytes(t, head_dim);
  for (int64_t c = 0; c < head_dim; ++c) {
    uint16_t s16, m16;
    const GroupParams g = stored(group_params(t, x + c, rows, head_dim), s16, m16);
    params[c] = s16;
    if (t == KVDType::Q4) params[head_dim + c] = m16;
    for (int64_t r = 0; r < rows; ++r) put_code(t, codes + static_cast<size_t>(r) * rb, c, code_of(t, x[r * head_dim + c], g));
  }
}

void dequantize_key_rows(KVDType t, const uint8_t* codes, const uint16_t* params, int64_t rows, int64_t head_dim,
                         float* out) {
  check_quantized(t);
  const size_t rb = kv_row_bytes(t, head_dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < head_dim; ++c) {
      const float m = t == KVDType::Q4 ? f16_to_f32(params[head_dim + c]) : 0.f;
      out[r * head_dim + c] = m + f16_to_f32(params[c]) * get_code(t, codes + static_cast<size_t>(r) * rb, c);
    }
}

void quantize_value_group(KVDType t, const float* x, int64_t n, uint8_t* codes, uint16_t* params) {
  check_quantized(t);
  uint16_t s16, m16;
  const GroupParams g = stored(group_params(t, x, n, 1), s16, m16);
  params[0] = s16;
  if (t == KVDType::Q4) params[1] = m16;
  for (int64_t i = 0; i < n; ++i) put_code(t, codes, i, code_of(t, x[i], g));
}

void dequantize_value_group(KVDType t, const uint8_t* codes, const uint16_t* params, int64_t n, float* out) {
  check_quantized(t);
  const float s = f16_to_f32(params[0]), m = t == KVDType::Q4 ? f16_to_f32(params[1]) : 0.f;
  for (int64_t i = 0; i < n; ++i) out[i] = m + s * get_code(t, codes, i);
}

void dot_key_rows(KVDType t, const float* q, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                  int64_t rows, int64_t head_dim, float scale, float* qs, float* out) {
  check_quantized(t);
  float bias = 0;
  for (int64_t c = 0; c < head_dim; ++c) {
    qs[c] = q[c] * f16_to_f32(params[c]) * scale;
    if (t == KVDType::Q4) bias += q[c] * f16_to_f32(params[head_dim + c]) * scale;
  }
  detail::table_for(active_isa()).dot_code_rows[t == KVDType::Q4](qs, codes, code_stride, rows, head_dim, bias, out);
}

void dequantize_token_rows(KVDType t, const uint8_t* codes, size_t code_stride, const uint16_t* params, size_t param_stride,
                           int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float* out) {
  check_quantized(t);
  const int64_t seg = std::min(group, head_dim), np = kv_params_per_group(t);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < head_dim / seg; ++j)
      dequantize_value_group(t, codes + static_cast<size_t>(r) * code_stride + kv_row_bytes(t, j * seg),
                             params + static_cast<size_t>(r) * param_stride + (first_group + j) * np, seg, out + r * head_dim + j * seg);
}

void dot_token_key_rows(KVDType t, const float* q, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                        size_t param_stride, int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float scale,
                        float* out) {
  check_quantized(t);
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t segs = head_dim / group, np = kv_params_per_group(t);
  // Score of row r: scale * sum_j (s_rj <q_j, codes_rj> + m_rj sum(q_j)), segments in order. The
  // integer-code dots run over a tile of rows per segment (one kernel call each), then combine.
  constexpr int64_t kTile = 64;
  float raw[kTile], acc[kTile];
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t n = std::min(kTile, rows - r0);
    std::fill_n(acc, n, 0.f);
    for (int64_t j = 0; j < segs; ++j) {
      const float* qj = q + j * group;
      float qsum = 0;
      if (t == KVDType::Q4)
        for (int64_t c = 0; c < group; ++c) qsum += qj[c];
      table.dot_code_rows[t == KVDType::Q4](qj, codes + static_cast<size_t>(r0) * code_stride + kv_row_bytes(t, j * group),
                                            code_stride, n, group, 0.f, raw);
      for (int64_t r = 0; r < n; ++r) {
        const uint16_t* p = params + static_cast<size_t>(r0 + r) * param_stride + (first_group + j) * np;
        acc[r] += f16_to_f32(p[0]) * raw[r] + (t == KVDType::Q4 ? f16_to_f32(p[1]) * qsum : 0.f);
      }
    }
    for (int64_t r = 0; r < n; ++r) out[r0 + r] = scale * acc[r];
  }
}

void axpy_value_rows(KVDType t, const float* p, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                     size_t param_stride, int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float* y) {
  check_quantized(t);
  const int64_t seg = std::min(group, head_dim);
  detail::table_for(active_isa()).axpy_code_rows[t == KVDType::Q4](p, codes, code_stride, params, param_stride, first_group, seg,
                                                                   head_dim / seg, rows, y);
}

}  // namespace folio::kernels
