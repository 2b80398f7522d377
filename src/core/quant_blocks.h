// Block-quantised weight formats with exactly llama.cpp's (ggml's) byte layouts, and the 8-bit
// activation formats their integer dot products read.
//
// Weights (GGUF tensor types; a row is a whole number of blocks):
//   Q8_0  32 elements, 34 bytes:  f16 d, int8 q[32];                    w = d q
//   Q4_0  32 elements, 18 bytes:  f16 d, u8 qs[16];                     w = d (nibble - 8)
//         qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
//   Q5_0  32 elements, 22 bytes:  f16 d, u8 qh[4], u8 qs[16];           w = d (q - 16)
//         q's low 4 bits as Q4_0's nibbles, its fifth bit is bit i of the little-endian qh.
//   Q5_1  32 elements, 24 bytes:  f16 d, f16 m, u8 qh[4], u8 qs[16];    w = d q + m
//         q as Q5_0's (unsigned, 0..31): llama.cpp's fallback for Q5_K rows that are not a multiple of 256.
//   Q4_K  256 elements, 144 bytes: f16 d, f16 dmin, u8 scales[12], u8 qs[128];
//         8 sub-blocks of 32 with 6-bit scale sc_j and min m_j (packed, see scale_min_k4):
//         w = d sc_j q - dmin m_j, q the nibble. Each 32 bytes of qs hold sub-block 2i in their
//         low nibbles and sub-block 2i + 1 in their high nibbles.
//   Q5_K  256 elements, 176 bytes: f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128];
//         as Q4_K with a fifth bit: element l of sub-block j takes bit j of qh[l] as its 16s.
//   Q6_K  256 elements, 210 bytes: u8 ql[128], u8 qh[64], int8 scales[16], f16 d;
//         16 groups of 16 with an 8-bit signed scale: w = d sc_g (q - 32), q of 6 bits: each
//         half of 128 elements has 64 bytes of ql (low nibbles: elements 0-31 and 32-63 of the
//         half, high nibbles: 64-95 and 96-127) and 32 bytes of qh (2 bits for each quarter).
//
// Activations (f32 rows quantised once per matmul call, shared by every weight row):
//   ActQ8   per 32 elements: d = max|x| / 127 rounded to f16 (as llama.cpp's q8_0), q = round(x / d),
//           and s = d times the sum of q rounded to f16 (llama.cpp's q8_1: q5_1's minima need it).
//   ActQ8K  per 256 elements: d = max|x| / 127 as f32, q = round(x / d), and the sums of q over
//           each 16 elements (the K formats' minima and Q6_K's offset of 32 need them).
// The integer dot of a weight block with an activation block is exact; how it is turned into
// floats is fixed per format (kernels/cpu/quant_dot.h), so every ISA gives the same bits.
//
// The quantizers are deterministic. Q8_0, Q4_0, Q5_0 and Q5_1 write exactly what llama.cpp's
// reference quantizer writes (tested against llama-quantize's files). The K formats use max-based
// scales and recompute their codes with the 6- or 8-bit sub-block scales as stored: valid blocks,
// but not llama.cpp's choices (its search for the best scales lowers the error further).
// Files quantised by llama.cpp's own tool load and run the same whoever wrote them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace folio {

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

struct BlockQ4K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4K) == 144);

struct BlockQ5K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5K) == 176);

struct BlockQ6K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6K) == 210);

struct ActQ8 {
  float d;  // already rounded through f16
  float s;  // the codes' sum times the unrounded d, rounded through f16 (llama.cpp's q8_1, for q5_1)
  int8_t q[32];
};

// The codes first and the size a multiple of 64 bytes: in a buffer that starts on a cache line
// (kernels/cpu/matmul.cpp's), every block's codes do too, so a 512-bit load of them is never split
// across two lines (the split loads cost q6_k's decode product ~5% in cache; docs/benchmarks.md).
struct ActQ8K {
  int8_t q[256];
  float d;
  int16_t bsums[16];    // sum of q[16 g .. 16 g + 15]
  int16_t bsums32[8];   // sum of q[32 j .. 32 j + 31] (the K formats' sub-blocks)
  uint8_t unused[12];
};
static_assert(sizeof(ActQ8K) == 320);

// Sub-block j (0..7) of a Q4_K / Q5_K block: its 6-bit scale and min from the 12 packed bytes.
// Bytes 0-3 hold scales 0-3 (low 6 bits), bytes 4-7 mins 0-3; scales and mins 4-7 keep their low
// 4 bits in bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in the top 2 bits
// of bytes 0-3 (scales) and 4-7 (mins).
inline void scale_min_k4(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// All eight scales and mins at once, by 32-bit word operations on the same packing (the kernels
// unpack every block of every row; scale_min_k4 per sub-block cost them a third of their time).
// Byte i of sc / m is scale / min i. Returned in registers: the kernels' vector loads of the bytes
// stored through memory stalled on store forwarding (two 4-byte stores read as one 8-byte load).
struct ScalesMinsK4 {
  uint64_t sc, m;
};
inline ScalesMinsK4 scales_mins_k4(const uint8_t* s) {
  uint32_t w[3];
  std::memcpy(w, s, 12);
  constexpr uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0xc0c0c0c0;
  const uint32_t sc_lo = w[0] & low6;                                  // scales 0-3
  const uint32_t sc_hi = (w[2] & low4) | ((w[0] & top2) >> 2);         // scales 4-7: low nibbles of bytes 8-11, top bits of 0-3
  const uint32_t m_lo = w[1] & low6;                                   // mins 0-3
  const uint32_t m_hi = ((w[2] >> 4) & low4) | ((w[1] & top2) >> 2);  // mins 4-7: high nibbles of bytes 8-11, top bits of 4-7
  return {sc_lo | (uint64_t{sc_hi} << 32), m_lo | (uint64_t{m_hi} << 32)};
}
inline void scales_mins_k4(const uint8_t* s, uint8_t sc[8], uint8_t m[8]) {
  const ScalesMinsK4 u = scales_mins_k4(s);
  for (int i = 0; i < 8; ++i) {
    sc[i] = static_cast<uint8_t>(u.sc >> (8 * i));
    m[i] = static_cast<uint8_t>(u.m >> (8 * i));
  }
}

// Dequantise n elements (a multiple of the format's block size) of one format to f32.
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);

// Quantise n f32 elements (a multiple of the block size) into blocks of one format.
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
// q5_1: the block's minimum and (max - min) / 31 as llama.cpp's reference quantizer takes them.
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);

// Activation rows: n elements (a multiple of 32, resp. 256) into n / 32 (n / 256) blocks.
void quantize_act_q8(const float* x, ActQ8* dst, int64_t n);
void quantize_act_q8k(const float* x, ActQ8K* dst, int64_t n);

}  // namespace folio
