// KVLayout: the shape of one token's keys and values in one layer, and how they are stored.
//
// Storage types are chosen separately for keys and values, and for the reference (the pinned first
// prefill) and the window (generated tokens): KVTypes. Float types store rows as they are;
// quantised types (q8, q4: kernels/cpu/kv_quant.h) store integer codes plus f16 group parameters.
// A block of T token rows is laid out as
//   K: codes or elements, head-major [n_kv_heads][T][row], then for quantised keys the per-channel
//      parameters of its one key group [n_kv_heads][nparams][head_dim];
//   V: the same head-major rows, then for quantised values the per-token parameters
//      [T][row_elems / value_group][nparams];
// each part starting 64-byte aligned. A block whose quantised keys are kept per token (the window:
// KeyScales::PerToken) has instead of the per-channel parameters the per-token ones
// [T][n_kv_heads * head_dim / kv_token_key_group(head_dim)][nparams], as values keep theirs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "kernels/cpu/kv_quant.h"

namespace folio {

using kernels::KVDType;

struct KVTypes {
  KVDType ref_k = KVDType::F32, ref_v = KVDType::F32;  // the reference (and every token under `full`)
  KVDType win_k = KVDType::F32, win_v = KVDType::F32;  // the generated tokens of the window
  // Keys and values are stored rotated per head by the normalised Walsh-Hadamard transform
  // (kernels/cpu/hadamard.h); the decoder rotates queries to match and attention's output back.
  bool rotated = false;
  static KVTypes uniform(KVDType t) { return {t, t, t, t}; }
  bool any_quantized() const {
    return kernels::kv_quantized(ref_k) || kernels::kv_quantized(ref_v) || kernels::kv_quantized(win_k) ||
           kernels::kv_quantized(win_v);
  }
  // "q8" when all four agree, else "k=q8,v=q4,window=f16"-style.
  std::string name() const;
};

// How a block's quantised keys keep their scales: per channel over the block's rows (one key group;
// reference blocks), or per token in segments of kv_token_key_group channels (window blocks).
enum class KeyScales : uint8_t { PerChannel, PerToken };

// Where the parts of one block live, relative to its start.
struct KVBlockGeometry {
  size_t k_params = 0, v = 0, v_params = 0, bytes = 0;
  size_t k_head_stride = 0, v_head_stride = 0;
  size_t k_param_stride = 0;  // per-token keys: parameters (uint16) per row; 0 otherwise
};

struct KVLayout {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  KVTypes types;

  KVLayout() = default;
  KVLayout(int64_t layers, int64_t kv_heads, int64_t hd, DType dtype = DType::F32)
      : KVLayout(layers, kv_heads, hd, KVTypes::uniform(kernels::kv_from_dtype(dtype))) {}
  // InvalidInput when a quantised type cannot tile the shape (q4 needs an even head_dim).
  KVLayout(int64_t layers, int64_t kv_heads, int64_t hd, KVTypes t);

  int64_t row_elems() const { return n_kv_heads * head_dim; }
  int64_t value_group() const { return kernels::kv_value_group(row_elems(), head_dim); }
  KVBlockGeometry geometry(KVDType k, KVDType v, int64_t tokens, KeyScales ks = KeyScales::PerChannel) const;
  size_t block_bytes(KVDType k, KVDType v, int64_t tokens, KeyScales ks = KeyScales::PerChannel) const {
    return geometry(k, v, tokens, ks).bytes;
  }
  // Bytes of K and V for `tokens` tokens in all layers stored as reference, in whole key groups:
  // what a reference token costs on average (exact for float types).
  double reference_bytes_per_token() const;
};

}  // namespace folio
