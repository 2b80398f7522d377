// Portable kernels for CPUs without AVX2/FMA/F16C (plain x86-64 or anything else GCC targets).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "kernels/cpu/kernel_table.h"
#include "core/row_interleave.h"

namespace folio::kernels::detail {
namespace {

struct VScalar {
  using reg = float;
  static constexpr int W = 1;
  // Scalar code has 16 xmm registers too; the float GEMV tile's 2 x 2 x 2 accumulators fit.
  static constexpr int kGemvInputs = 2;
  static constexpr int kGemvRows = 2;
  static constexpr int kGemvLanes = 2;
  static reg zero() { return 0.0f; }
  static reg set1(float v) { return v; }
  static reg load(const float* p) { return *p; }
  static reg load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static reg load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
  static reg load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static void store(float* p, reg v) { *p = v; }
  static reg fma(reg a, reg b, reg c) { return a * b + c; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg add(reg a, reg b) { return a + b; }
  static float hsum(reg v) { return v; }
  static float f16(uint16_t h) { return f16_to_f32(h); }
  static reg exp(reg x) { return std::exp(x); }
};

// int8_gemm_impl.h's traits: one 16-row panel slice of 64 bytes, one row and panel per tile.
struct GScalar {
  struct bytes {
    uint8_t b[64];
  };
  struct acc {
    int32_t v[16];
  };
  static constexpr int kVecs = 1, kRows = 1, kPanels = 1;
  static acc zero() { return {}; }
  static bytes bcast4(const uint8_t* p) {
    bytes r;
    for (int i = 0; i < 64; ++i) r.b[i] = p[i % 4];
    return r;
  }
  static bytes load(const int8_t* p) {
    bytes r;
    std::memcpy(r.b, p, 64);
    return r;
  }
  static acc dot(acc c, const bytes& u, const bytes& s) {
    for (int j = 0; j < 16; ++j)
      for (int t = 0; t < 4; ++t) c.v[j] += u.b[4 * j + t] * static_cast<int8_t>(s.b[4 * j + t]);
    return c;
  }
  static void store(int32_t* p, const acc& v) { std::memcpy(p, v.v, sizeof v.v); }

  using ints = int32_t;
  static constexpr int kFloats = 1;
  static ints zero_ints() { return 0; }
  static ints bits_of(const float* x) {
    int32_t b;
    std::memcpy(&b, x, 4);
    return b;
  }
  static ints max_ints(ints a, ints b) { return a > b ? a : b; }
  static int32_t hmax(ints v) { return v; }
  // This file is built without FMA, so the product and the sum round on their own.
  static void codes(const float* x, float inv, uint8_t* q) {
    float v = *x > 0.0f ? *x : 0.0f;
    v = v * inv + 0.5f;
    *q = static_cast<uint8_t>(static_cast<int32_t>(v < 127.0f ? v : 127.0f));
  }
};

// The reference integer traits of quant_dot_impl.h: 32 bytes and 8 lanes as plain arrays, with the
// lane structure and float order of the SIMD versions spelled out.
struct IScalar {
  struct bytes {
    int16_t b[32];  // 8-bit values widened; unsigned or signed as the caller treats them
  };
  struct i32 {
    int32_t v[8];
  };
  using i16 = i32;  // a scale per lane
  struct f32 {
    float v[8];
  };
  static bytes load(const void* p) {
    bytes r;
    for (int i = 0; i < 32; ++i) r.b[i] = static_cast<const int8_t*>(p)[i];
    return r;
  }
  static bytes nibbles_lo(bytes x) {
    for (auto& b : x.b) b = static_cast<int16_t>(static_cast<uint8_t>(b) & 15);
    return x;
  }
  static bytes nibbles_hi(bytes x) {
    for (auto& b : x.b) b = static_cast<int16_t>(static_cast<uint8_t>(b) >> 4);
    return x;
  }
  static bytes expand16(const uint8_t* p) {
    bytes r;
    for (int i = 0; i < 16; ++i) {
      r.b[i] = static_cast<int16_t>(p[i] & 15);
      r.b[i + 16] = static_cast<int16_t>(p[i] >> 4);
    }
    return r;
  }
  static bytes splat8(int k) {
    bytes r;
    for (auto& b : r.b) b = static_cast<int16_t>(k);
    return r;
  }
  static bytes or_(bytes x, bytes y) {
    for (int i = 0; i < 32; ++i) x.b[i] = static_cast<int16_t>(static_cast<uint8_t>(x.b[i]) | static_cast<uint8_t>(y.b[i]));
    return x;
  }
  static bytes bit_set(bytes x, uint8_t mask) {
    for (auto& b : x.b) b = static_cast<int16_t>((static_cast<uint8_t>(b) & mask) ? 16 : 0);
    return x;
  }
  static bytes bits32(uint32_t u) {
    bytes r;
    for (int i = 0; i < 32; ++i) r.b[i] = static_cast<int16_t>(((u >> i) & 1) ? 16 : 0);
    return r;
  }
  static bytes with_bits32(bytes b, uint32_t u) { return or_(b, bits32(u)); }
  static bytes q6(bytes lo, bytes qh, int quarter) {
    for (int i = 0; i < 32; ++i)
      lo.b[i] = static_cast<int16_t>(lo.b[i] | (((static_cast<uint8_t>(qh.b[i]) >> (2 * quarter)) & 3) << 4));
    return lo;
  }
  static bytes abs8(bytes w) {
    for (auto& b : w.b) b = static_cast<int16_t>(b < 0 ? -b : b);
    return w;
  }
  static bytes sign8(bytes x, bytes w) {
    for (int i = 0; i < 32; ++i) x.b[i] = static_cast<int16_t>(w.b[i] < 0 ? -x.b[i] : (w.b[i] == 0 ? 0 : x.b[i]));
    return x;
  }
  static i32 dot_u8s8(bytes u, bytes s) {
    i32 r;
    for (int k = 0; k < 8; ++k) {
      r.v[k] = 0;
      for (int i = 4 * k; i < 4 * k + 4; ++i) r.v[k] += u.b[i] * s.b[i];
    }
    return r;
  }
  static i32 dot_u8s8_add(i32 acc, bytes u, bytes s) { return add(acc, dot_u8s8(u, s)); }
  // Lane k: the exact sum of v[k]'s 8 lanes.
  static i32 sums8(const i32* v) {
    i32 r;
    for (int k = 0; k < 8; ++k) {
      r.v[k] = 0;
      for (int j = 0; j < 8; ++j) r.v[k] += v[k].v[j];
    }
    return r;
  }
  template <size_t kStride>
  static f32 f16_strided(const uint8_t* p, int64_t m) {
    f32 r{};
    for (int64_t k = 0; k < m; ++k) {
      uint16_t h;
      std::memcpy(&h, p + k * kStride, 2);
      r.v[k] = f16_to_f32(h);
    }
    return r;
  }
  template <size_t kStride>
  static f32 f16_strided8(const uint8_t* p) { return f16_strided<kStride>(p, 8); }
  static f32 fmul(f32 a, f32 b) {
    for (int k = 0; k < 8; ++k) a.v[k] *= b.v[k];
    return a;
  }
  static f32 load8(const float* p) {
    f32 r;
    for (int k = 0; k < 8; ++k) r.v[k] = p[k];
    return r;
  }
  static i32 add(i32 a, i32 b) {
    for (int k = 0; k < 8; ++k) a.v[k] += b.v[k];
    return a;
  }
  static i32 sub(i32 a, i32 b) {
    for (int k = 0; k < 8; ++k) a.v[k] -= b.v[k];
    return a;
  }
  static i32 set1(int v) { return scale16(v, v); }
  static i32 sub_times32(i32 a, i32 b) {
    for (int k = 0; k < 8; ++k) a.v[k] -= 32 * b.v[k];
    return a;
  }
  static i16 scale16(int a, int b) { return {{a, a, a, a, b, b, b, b}}; }
  static i32 dot_scaled(bytes u, bytes s, i16 scale) {
    i32 r = dot_u8s8(u, s);
    for (int k = 0; k < 8; ++k) r.v[k] *= scale.v[k];
    return r;
  }
  static i32 dot_scaled_add(i32 acc, bytes u, bytes s, i16 scale) { return add(acc, dot_scaled(u, s, scale)); }
  struct scales {
    int v[8];
  };
  static scales scales_u8(uint64_t s8) {
    scales t;
    for (int i = 0; i < 8; ++i) t.v[i] = static_cast<uint8_t>(s8 >> (8 * i));
    return t;
  }
  static scales scales_i8(const int8_t* s8) {
    scales t;
    for (int i = 0; i < 8; ++i) t.v[i] = s8[i];
    return t;
  }
  static i16 scale_pair(const scales& t, int a, int b) { return scale16(t.v[a], t.v[b]); }
  template <int G>
  static i32 block_sums(const i32* s, const i32* m) {
    i32 r{};
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < 8; ++k) {
        r.v[g] += s[g].v[k];
        r.v[G + g] += m[g].v[k];
      }
    return r;
  }
  static i32 k4_min_lanes(uint64_t m, const int16_t* v) {
    i32 r{};
    for (int k = 0; k < 4; ++k)
      r.v[k] = static_cast<uint8_t>(m >> (16 * k)) * v[2 * k] + static_cast<uint8_t>(m >> (16 * k + 8)) * v[2 * k + 1];
    return r;
  }
  static i32 q6k_offset_lanes(const int8_t* s, const int16_t* v) {
    i32 r;
    for (int k = 0; k < 8; ++k) r.v[k] = s[2 * k] * v[2 * k] + s[2 * k + 1] * v[2 * k + 1];
    return r;
  }
  static f32 fzero() { return {}; }
  static f32 fma_lanes(i32 v, f32 s, f32 acc) {
    for (int k = 0; k < 8; ++k) acc.v[k] = std::fma(static_cast<float>(v.v[k]), s.v[k], acc.v[k]);
    return acc;
  }
  template <int G>
  static f32 block_factors(float d, float dmin, const float* dx) {
    f32 r{};
    for (int g = 0; g < G; ++g) {
      r.v[g] = d * dx[g];
      r.v[G + g] = -(dmin * dx[g]);
    }
    return r;
  }
  static void store8(float* p, f32 a) {
    for (int k = 0; k < 8; ++k) p[k] = a.v[k];
  }
  static float hsum(f32 a) {
    const float* v = a.v;
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
  }
  static float f16(uint16_t h) { return f16_to_f32(h); }
  static void quantize_act_32(const float* x, void* dst, int64_t n) { quantize_act_q8(x, static_cast<ActQ8*>(dst), n); }
  static void quantize_act_256(const float* x, void* dst, int64_t n) { quantize_act_q8k(x, static_cast<ActQ8K*>(dst), n); }
};

}  // namespace
}  // namespace folio::kernels::detail

#include "kernels/cpu/kernels_impl.h"

namespace folio::kernels::detail {

namespace {
constexpr KernelTable kScalarTable = make_table<VScalar, IScalar, GScalar>();
}  // namespace

const KernelTable& scalar_table() { return kScalarTable; }

}  // namespace folio::kernels::detail
