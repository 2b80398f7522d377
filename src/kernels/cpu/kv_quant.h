// Quantised KV storage formats (q8, q4) and the arithmetic on them.
//
// The recipe is KIVI's: keys are quantised per channel over a group of kKVKeyGroup tokens (outlier
// channels in keys are persistent across tokens, so a per-channel scale keeps them exact), values
// per token over groups of channels (value error then stays local to one token's contribution).
//   q8  symmetric: x ~ s * c, c in [-127, 127] (int8), one f16 scale per group.
//   q4  asymmetric: x ~ m + s * c, c in [0, 15] (two per byte, low nibble first), f16 scale and min.
// Groups are quantised once complete; until then their keys live in q8 per token (see SequenceKV).
// The window (the last W generated tokens, rewritten one row per step) stores its keys per token
// instead, like values, in segments of kv_token_key_group(head_dim) channels: a key is then final
// when written and needs no f16 staging group beside the ring (which cost the window of a small
// model a third of its q4 bytes).
//
// Attention reads the codes directly: for keys, q . k_t = sum_c (q_c s_c) code_tc + sum_c q_c m_c,
// so a query is scaled once per group and then dotted with integer codes; for values,
// y += p_t (s code_t + m) per channel group. No dequantised copy of a span is ever made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace folio::kernels {

enum class KVDType : uint8_t { F32, F16, BF16, Q8, Q4 };

inline constexpr int64_t kKVKeyGroup = 64;    // tokens sharing one per-channel key scale
inline constexpr int64_t kKVValueGroup = 64;  // channels sharing one per-token value scale (at most)

const char* kv_dtype_name(KVDType t);
std::optional<KVDType> parse_kv_dtype_name(std::string_view s);  // f32 f16 bf16 q8 q4 (+ "float32"...)
inline bool kv_quantized(KVDType t) { return t == KVDType::Q8 || t == KVDType::Q4; }
// The float DType of a float KV type (F32/F16/BF16).
DType kv_float_dtype(KVDType t);
inline KVDType kv_from_dtype(DType d) {
  return d == DType::F16 ? KVDType::F16 : d == DType::BF16 ? KVDType::BF16 : KVDType::F32;
}
// f16 scale (and min for q4) per group.
inline int64_t kv_params_per_group(KVDType t) { return t == KVDType::Q4 ? 2 : t == KVDType::Q8 ? 1 : 0; }
// Bytes of one head's row of `head_dim` elements (codes only for quantised types).
size_t kv_row_bytes(KVDType t, int64_t head_dim);
// Channels per value group for rows of `row_elems` channels in heads of `head_dim`: kKVValueGroup
// when it tiles both the row and the heads, else head_dim (one group per head row).
int64_t kv_value_group(int64_t row_elems, int64_t head_dim);

// Channels sharing one per-token key scale (window keys): kKVValueGroup when it divides head_dim,
// else head_dim (one group per head row).
inline int64_t kv_token_key_group(int64_t head_dim) { return head_dim % kKVValueGroup == 0 ? kKVValueGroup : head_dim; }

// Keys of one head, `rows` tokens x head_dim, quantised per channel: codes [rows][kv_row_bytes],
// params [nparams][head_dim] (scales, then mins for q4).
void quantize_key_group(KVDType t, const float* x, int64_t rows, int64_t head_dim, uint8_t* codes, uint16_t* params);
void dequantize_key_rows(KVDType t, const uint8_t* codes, const uint16_t* params, int64_t rows, int64_t head_dim,
                         float* out);
// One token's value row of `n` channels (one group), quantised per token: codes, params[nparams].
void quantize_value_group(KVDType t, const float* x, int64_t n, uint8_t* codes, uint16_t* params);
void dequantize_value_group(KVDType t, const uint8_t* codes, const uint16_t* params, int64_t n, float* out);

// out[r] = scale * (q . key r) for `rows` quantised key rows of one head (codes `code_stride` apart).
// qs is scratch of head_dim floats.
void dot_key_rows(KVDType t, const float* q, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                  int64_t rows, int64_t head_dim, float scale, float* qs, float* out);
// `rows` rows of one head quantised per token (values; window keys) as f32 [rows][head_dim]: row r's
// codes at codes + r * code_stride, its parameters for channel segment j (min(group, head_dim)
// channels each) at params + r * param_stride + (first_group + j) * nparams, as values keep theirs.
void dequantize_token_rows(KVDType t, const uint8_t* codes, size_t code_stride, const uint16_t* params, size_t param_stride,
                           int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float* out);
// The same scores for keys quantised per token (window keys): row r's parameters for channel
// segment j (`group` channels each, head_dim / group of them) at params + r * param_stride +
// (first_group + j) * nparams, as values keep theirs.
void dot_token_key_rows(KVDType t, const float* q, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                        size_t param_stride, int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float scale,
                        float* out);
// y[head_dim] += sum_r p[r] * value row r, for quantised value rows of one head. Row r's codes are
// at codes + r * code_stride; its params for channel segment j at params + r * param_stride +
// (first_group + j) * nparams, each segment `group` channels (head_dim / group segments, or one
// segment of head_dim when the group spans several heads).
void axpy_value_rows(KVDType t, const float* p, const uint8_t* codes, size_t code_stride, const uint16_t* params,
                     size_t param_stride, int64_t first_group, int64_t group, int64_t rows, int64_t head_dim, float* y);

}  // namespace folio::kernels
