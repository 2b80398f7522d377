#include "core/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"

namespace folio {

namespace {

// A scale stored as f16 and the value the kernels will read back from it.
float through_f16(float v, uint16_t* stored) {
  *stored = f32_to_f16(v);
  return f16_to_f32(*stored);
}

int clamp_round(float v, int lo, int hi) { return std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi); }

// The element of x with the largest magnitude, with its sign (0 for an all-zero block).
float signed_absmax(const float* x, int n) {
  float best = 0.f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  return best;
}

// Packs eight 6-bit scales and mins the way scale_min_k4 unpacks them.
void pack_scales_k4(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

// The affine code x ~ scale * q - offset (q in 0..levels, offset >= 0) of one sub-block with the
// least squared error among a few candidates: codes chosen with a grid step around (hi - lo) /
// levels, then scale and offset refitted to those codes by least squares. Starting from the
// plain min-max range alone leaves 10-20% more error at 4 bits (the extremes waste levels).
void fit_affine(const float* x, int n, int levels, float* scale, float* offset) {
  float lo = 0.f, hi = 0.f;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *scale = (hi - lo) / static_cast<float>(levels);
  *offset = -lo;
  if (hi == lo) return;
  auto error_of = [&](float a, float b) {  // x ~ a q + b with q rounded from a, b
    double e = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clamp_round((x[i] - b) / a, 0, levels);
      e += (a * q + b - x[i]) * (a * q + b - x[i]);
    }
    return e;
  };
  double best = error_of(*scale, lo);
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (static_cast<float>(levels) + 0.1f * static_cast<float>(step)) / (hi - lo);
    double sq = 0, sq2 = 0, sx = 0, sxq = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clamp_round(iscale * (x[i] - lo), 0, levels);
      sq += q;
      sq2 += static_cast<double>(q) * q;
      sx += x[i];
      sxq += static_cast<double>(x[i]) * q;
    }
    const double det = n * sq2 - sq * sq;
    if (det <= 0) continue;
    double a = (n * sxq - sq * sx) / det, b = (sq2 * sx - sq * sxq) / det;
    if (b > 0) {  // offsets are subtracted, never added: refit through the origin
      b = 0;
      a = sq2 > 0 ? sxq / sq2 : 0;
    }
    if (a <= 0) continue;
    const double e = error_of(static_cast<float>(a), static_cast<float>(b));
    if (e < best) {
      best = e;
      *scale = static_cast<float>(a);
      *offset = static_cast<float>(-b);
    }
  }
}

// Q4_K / Q5_K: per sub-block of 32 an affine code (fit_affine) with `levels` steps; the sub-block
// scales and offsets are then quantised to 6 bits against the block's d and dmin, and the codes are
// recomputed with the scales the kernels will actually use.
void quantize_k_affine(const float* x, int levels, uint16_t* d_out, uint16_t* dmin_out, uint8_t scales[12],
                       uint8_t q[256]) {
  float scale[8], minv[8], max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 8; ++j) {
    fit_affine(x + 32 * j, 32, levels, &scale[j], &minv[j]);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  const float d = through_f16(max_scale / 63.f, d_out);
  const float dmin = through_f16(max_min / 63.f, dmin_out);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0.f ? clamp_round(scale[j] / d, 0, 63) : 0);
    m[j] = static_cast<uint8_t>(dmin > 0.f ? clamp_round(minv[j] / dmin, 0, 63) : 0);
    const float step = d * sc[j], offset = dmin * m[j];
    for (int i = 0; i < 32; ++i)
      q[32 * j + i] = static_cast<uint8_t>(step > 0.f ? clamp_round((x[32 * j + i] + offset) / step, 0, levels) : 0);
  }
  pack_scales_k4(sc, m, scales);
}

// Q4_K / Q5_K nibbles: each 32 bytes hold sub-block 2i (low) and 2i + 1 (high).
void pack_nibbles_k(const uint8_t q[256], uint8_t qs[128]) {
  for (int i = 0; i < 4; ++i)
    for (int l = 0; l < 32; ++l)
      qs[32 * i + l] = static_cast<uint8_t>((q[64 * i + l] & 15) | ((q[64 * i + 32 + l] & 15) << 4));
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t k = 0; k < n / 32; ++k, dst += 32) {
    const float d = f16_to_f32(b[k].d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>((b[k].qs[j] & 15) - 8);
      dst[j + 16] = d * static_cast<float>((b[k].qs[j] >> 4) - 8);
    }
  }
}

namespace {

// q5_0 and q5_1 codes (0..31): element j < 16 in the low nibble of qs[j], element j + 16 in its high
// nibble, each code's 16s in bit (element) of the little-endian qh.
void unpack_q5(const uint8_t qs[16], const uint8_t qh_bytes[4], int q[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int>((qs[j] & 15u) | (((qh >> j) & 1u) << 4));
    q[j + 16] = static_cast<int>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}

void pack_q5(const int q[32], uint8_t qs[16], uint8_t qh_bytes[4]) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

}  // namespace

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  int q[32];
  for (int64_t k = 0; k < n / 32; ++k, dst += 32) {
    const float d = f16_to_f32(b[k].d);
    unpack_q5(b[k].qs, b[k].qh, q);
    for (int j = 0; j < 32; ++j) dst[j] = d * static_cast<float>(q[j] - 16);
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  int q[32];
  for (int64_t k = 0; k < n / 32; ++k, dst += 32) {
    const float d = f16_to_f32(b[k].d), m = f16_to_f32(b[k].m);
    unpack_q5(b[k].qs, b[k].qh, q);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(q[j]) * d + m;
  }
}

namespace {

// q4_k and q5_k (kFifth): the same sub-blocks, q5_k adding bit j of qh[l] as element l's 16s.
template <class Block, bool kFifth>
void dequantize_k4(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t k = 0; k < n / 256; ++k) {
    const float d = f16_to_f32(b[k].d), dmin = f16_to_f32(b[k].dmin);
    for (int j = 0; j < 8; ++j, dst += 32) {
      uint8_t sc, m;
      scale_min_k4(j, b[k].scales, &sc, &m);
      const uint8_t* qs = b[k].qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        int q = (qs[l] >> shift) & 15;
        if constexpr (kFifth) q |= ((b[k].qh[l] >> j) & 1) << 4;
        dst[l] = d * sc * static_cast<float>(q) - dmin * m;
      }
    }
  }
}

}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) { dequantize_k4<BlockQ4K, false>(src, dst, n); }

void dequantize_q5_k(const void* src, float* dst, int64_t n) { dequantize_k4<BlockQ5K, true>(src, dst, n); }

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6K*>(src);
  for (int64_t k = 0; k < n / 256; ++k) {
    const float d = f16_to_f32(b[k].d);
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
      const uint8_t lo = b[k].ql[64 * half + 32 * (quarter % 2) + l];
      const int low = quarter < 2 ? (lo & 15) : (lo >> 4);
      const int high = (b[k].qh[32 * half + l] >> (2 * quarter)) & 3;
      dst[e] = d * b[k].scales[e / 16] * static_cast<float>((low | (high << 4)) - 32);
    }
    dst += 256;
  }
}

namespace {

// q4_0 and q5_0 round as llama.cpp's reference quantizer does, so files match llama-quantize's
// byte for byte: the inverse scale from the unrounded scale, codes truncated from x / d + offset + 0.5
// (the largest magnitude maps to code 0 exactly; nothing rounds below 0).
int truncated_code(float v, int hi) { return std::min(hi, static_cast<int>(static_cast<int8_t>(v))); }

}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t k = 0; k < n / 32; ++k, src += 32) {
    const float d = signed_absmax(src, 32) / -8.f;
    b[k].d = f32_to_f16(d);
    const float id = d != 0.f ? 1.f / d : 0.f;
    for (int j = 0; j < 16; ++j) {
      const int lo = truncated_code(src[j] * id + 8.5f, 15), hi = truncated_code(src[j + 16] * id + 8.5f, 15);
      b[k].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  int q[32];
  for (int64_t k = 0; k < n / 32; ++k, src += 32) {
    const float d = signed_absmax(src, 32) / -16.f;
    b[k].d = f32_to_f16(d);
    const float id = d != 0.f ? 1.f / d : 0.f;
    for (int j = 0; j < 32; ++j) q[j] = truncated_code(src[j] * id + 16.5f, 31);
    pack_q5(q, b[k].qs, b[k].qh);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  int q[32];
  for (int64_t k = 0; k < n / 32; ++k, src += 32) {
    float lo = src[0], hi = src[0];
    for (int j = 1; j < 32; ++j) lo = std::min(lo, src[j]), hi = std::max(hi, src[j]);
    const float d = (hi - lo) / 31.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    b[k].d = f32_to_f16(d);
    b[k].m = f32_to_f16(lo);
    // Truncation of (x - min) / d + 0.5, as llama.cpp's reference: at most 31 by construction.
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>((src[j] - lo) * id + 0.5f);
    pack_q5(q, b[k].qs, b[k].qh);
  }
}

namespace {

// q4_k and q5_k (kFifth): the same sub-blocks; q5_k keeps each code's 16s as bit j of qh[l].
template <class Block, bool kFifth>
void quantize_k4(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Block*>(dst);
  for (int64_t k = 0; k < n / 256; ++k, src += 256) {
    uint8_t q[256];
    quantize_k_affine(src, kFifth ? 31 : 15, &b[k].d, &b[k].dmin, b[k].scales, q);
    pack_nibbles_k(q, b[k].qs);
    if constexpr (kFifth) {
      std::memset(b[k].qh, 0, sizeof b[k].qh);
      for (int j = 0; j < 8; ++j)
        for (int l = 0; l < 32; ++l) b[k].qh[l] = static_cast<uint8_t>(b[k].qh[l] | ((q[32 * j + l] >> 4) << j));
    }
  }
}

}  // namespace

void quantize_q4_k(const float* src, void* dst, int64_t n) { quantize_k4<BlockQ4K, false>(src, dst, n); }

void quantize_q5_k(const float* src, void* dst, int64_t n) { quantize_k4<BlockQ5K, true>(src, dst, n); }

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6K*>(dst);
  for (int64_t k = 0; k < n / 256; ++k, src += 256) {
    float group_scale[16];
    for (int g = 0; g < 16; ++g) group_scale[g] = signed_absmax(src + 16 * g, 16) / -32.f;
    const float d = through_f16(signed_absmax(group_scale, 16) / -128.f, &b[k].d);
    uint8_t q[256];
    for (int g = 0; g < 16; ++g) {
      b[k].scales[g] = static_cast<int8_t>(d != 0.f ? clamp_round(group_scale[g] / d, -128, 127) : 0);
      const float step = d * b[k].scales[g];
      for (int i = 0; i < 16; ++i)
        q[16 * g + i] = static_cast<uint8_t>((step != 0.f ? clamp_round(src[16 * g + i] / step, -32, 31) : 0) + 32);
    }
    std::memset(b[k].qh, 0, sizeof b[k].qh);
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
      uint8_t& lo = b[k].ql[64 * half + 32 * (quarter % 2) + l];
      if (quarter < 2) lo = static_cast<uint8_t>(q[e] & 15);
      else lo = static_cast<uint8_t>(lo | ((q[e] & 15) << 4));
      b[k].qh[32 * half + l] = static_cast<uint8_t>(b[k].qh[32 * half + l] | ((q[e] >> 4) << (2 * quarter)));
    }
  }
}

void quantize_act_q8(const float* x, ActQ8* dst, int64_t n) {
  for (int64_t k = 0; k < n / 32; ++k, x += 32) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
    uint16_t stored;
    dst[k].d = through_f16(d, &stored);
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += dst[k].q[i] = static_cast<int8_t>(std::round(x[i] * id));
    dst[k].s = through_f16(d * static_cast<float>(sum), &stored);
  }
}

void quantize_act_q8k(const float* x, ActQ8K* dst, int64_t n) {
  for (int64_t k = 0; k < n / 256; ++k, x += 256) {
    ActQ8K& b = dst[k];
    const float max = signed_absmax(x, 256);
    if (max == 0.f) {
      std::memset(&b, 0, sizeof b);
      continue;
    }
    const float iscale = -127.f / max;
    // lrint rounds half to even as nearbyint does; with -fno-math-errno it is one vectorisable
    // conversion instead of a libm call per element (4% of a decode step).
    for (int i = 0; i < 256; ++i) b.q[i] = static_cast<int8_t>(std::min(127L, std::lrint(iscale * x[i])));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += b.q[16 * g + i];
      b.bsums[g] = static_cast<int16_t>(s);
    }
    for (int j = 0; j < 8; ++j) b.bsums32[j] = static_cast<int16_t>(b.bsums[2 * j] + b.bsums[2 * j + 1]);
    b.d = 1.f / iscale;
    std::memset(b.unused, 0, sizeof b.unused);
  }
}

}  // namespace folio
