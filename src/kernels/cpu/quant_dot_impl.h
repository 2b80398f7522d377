// Internal: ISA-generic GEMV over block-quantised weights (core/quant_blocks.h) and 8-bit
// activations, instantiated once per instruction set from kernels_impl.h (same rules: include it
// only from an ISA file, after its target pragma; everything in an anonymous namespace).
//
// An integer traits struct I supplies 256-bit integer work on 32 bytes at a time:
//   bytes (32 x 8-bit), i32 (8 x int32), f32 (8 x float),
//   load(p), nibbles_lo(b) / nibbles_hi(b) (each byte's low / high 4 bits),
//   expand16(p) (16 bytes -> 32: low nibbles then high nibbles), splat8(k), or_(a, b),
//   bit_set(b, mask) (16 where the byte has the mask's bit, else 0), with_bits32(b, u) (b with 16 added
//   to byte i where bit i of u is set; b's bytes below 16), q6(lo, hi, quarter),
//   abs8(w), sign8(x, w) (x negated where w < 0, 0 where w = 0),
//   dot_u8s8(u, s) -> i32 whose lane k is the exact sum of u[i] s[i] for i = 4k .. 4k + 3,
//   dot_u8s8_add(acc, u, s) = add(acc, dot_u8s8(u, s)),
//   dot_scaled(u, s, scale16(a, b)) -> the same lanes times a (lanes 0-3) or b (lanes 4-7), exactly,
//   dot_scaled_add(acc, u, s, scale) = add(acc, dot_scaled(u, s, scale)), scales_u8(u64) / scales_i8(p)
//   (8 scale bytes unpacked once; u64: byte i is scale i) and scale_pair(scales, a, b) = scale16(scale a, scale b),
//   add(i32, i32), sub(i32, i32), set1(int), sub_times32(a, b) (a - 32 b), block_sums<G>(s, m)
//   (lane g < G: the exact sum of s[g]'s 8 lanes, lane G + g: of m[g]'s; G = 1, 2 or 4),
//   k4_min_lanes(m (8 bytes of a u64), v[8]) (lane k < 4:
//   m[2k] v[2k] + m[2k+1] v[2k+1], lanes 4-7: 0) and q6k_offset_lanes(s[16], v[16]) (lane k: s[2k] v[2k] +
//   s[2k+1] v[2k+1]; int8 s), exact,
//   sums8(v[8]) (lane k: the exact sum of v[k]'s 8 lanes),
//   fzero(), fma_lanes(cvt(i32) by f32, f32), fmul(f32, f32), load8(p) (8 floats),
//   f16_strided8<S>(p) / f16_strided<S>(p, m) (the f16 at p + k S for k < 8, resp. k < m, the rest 0),
//   block_factors<G>(d, dmin, dx) (lane g < G: d dx[g], lane G + g: -(dmin dx[g]), each one rounded
//   product; the rest 0), store8(p, f32) (8 floats), hsum(f32) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), f16(h).
//
// A traits struct may also supply I::Wide, the same work 512 bits at a time (kernels_avx512_vnni.cpp):
//   bytes / i32 (64 bytes, 16 x int32), load(p) (64 bytes), load2(p, q) (32 bytes from each, p's
//   low), bcast32(p) (32 bytes in both halves), nibbles_lo / nibbles_hi, or_, bit_set2(b, lo, hi)
//   (bit_set with mask lo in the low half, hi in the high half), q6_2(lo, qh, shift_lo, shift_hi)
//   (q6 with each half's own shift of qh: 4, 2, 0 or -2), scales_u8 / scales_i8 as I's,
//   scale_pair(t, a, b) (scale a in the low half, b in the high half), scale_quads(t, first) (i16
//   lanes of each 128-bit quarter q = scale first + q), dot_scaled_add, add, zero(), and fold(v)
//   (I::i32: the low half plus the high half); k4_scales_mins(p) (a q4_k block's 12 packed bytes as
//   k4_params), k4_scales(params) (as scales_u8 of the scales), k4_min_lanes(params, v) (I's of the
//   minima), f16_2(p, q, a, b) (the f16 values at p and q); and for the 32-element formats f32 (16
//   floats), splat8, flip_sign_bit, dot_u8s8(_add), sub, expand16x2(p, q) and with_bits2(b, p, q)
//   (expand16 / with_bits32 of two blocks, the first low, the fifth bits' masks at p and q), store,
//   and pair_sums4(v[4]) (I::i32: the exact sums of 8 blocks' lanes in block order, block 2p in
//   v[p]'s low half and 2p + 1 in its high half).
// With it, the K formats' rows unpack two 32-byte chunks per step: half the vector instructions a
// byte, where those formats were bound by instructions rather than by memory in decode.
// The halves hold chunks whose lanes the 256-bit code adds into the same i32 lanes, so fold() gives
// the same exact sums and the floats the same bits.
//
// Every integer sum is exact, and the floats are combined in one fixed order per format, so all
// ISAs (the scalar traits are the reference) give the same bits, whatever the thread split or batch:
//   q8_0, q4_0, q5_0: per block b, one exact integer S (its codes less the offset against the
//   activations); 8 chains, chain b % 8 = fma(float(S), dw * dx, chain) in block order; out = hsum of
//   the chains. (llama.cpp keeps one chain; several let a core start a block before the last one's
//   FMA is done, and 8 take a batch of 8 blocks' sums in one vector FMA, the blocks' lanes summed
//   together by one hadd tree. A block's sum whole is what a lane per weight row or a tile (AMX)
//   gives. The rounding differs from llama.cpp's in the last bits, enough to move an 8-bit
//   activation code now and then: tests/runtime/gguf_deepseek_test.cpp allows for it.)
//   q5_1: the same, and one float adding fma(m_w, s_x) per block in order; out = hsum + that float.
//   q4_k, q5_k: per 256-block, one exact integer S (the scaled sums of all 8 sub-blocks) and one M
//   (the minima against the activations' sub-block sums); scaled = fma(float(S), dw * dx, scaled) and
//   minima = fma(float(M), -(dmin dx), minima), two floats in block order; out = scaled + minima.
//   No lane structure: tiles (AMX) give a sub-block's sum whole, and every kernel can meet them there.
//   q6_k: per 256-block, one exact integer S = sum over groups of 16 of scale times the dot of
//   (code - 32) with the activations (the codes' dots less 32 times the scaled 16-sums);
//   out = fma(float(S), dw * dx, out) in block order.

namespace folio::kernels::detail {
namespace {

constexpr int kMaxQGroup = 4;  // activation rows sharing one pass over a weight row

// Block formats of 32: weights() gives signed codes (q8_0) or unsigned ones (kUnsigned) with
// kOffset to subtract (q4_0: 8, q5_0: 16, q5_1: 0). Unsigned codes go straight into the u8 x s8
// product, and the offset comes off once per activation block for all rows of a tile (offset times
// its 4-element sums). q5_1 adds its block minimum instead (kMin): m_w times the activation block's
// s (d_x times its code sum, f16), into one float per row as llama.cpp does. All start with their
// f16 scale (q5_1's minimum follows it).
template <class I>
float block_scale(const uint8_t* b) {
  uint16_t d;
  std::memcpy(&d, b, 2);  // blocks are only 2-byte aligned
  return I::f16(d);
}

template <class I>
struct FmtQ8_0 {
  static constexpr int kOffset = 0;
  static constexpr bool kUnsigned = false, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static typename I::bytes weights(const uint8_t* b) { return I::load(b + offsetof(BlockQ8_0, q)); }
  template <class W>
  static typename W::bytes weights2(const uint8_t* b0, const uint8_t* b1) {
    return W::load2(b0 + offsetof(BlockQ8_0, q), b1 + offsetof(BlockQ8_0, q));
  }
};

template <class I>
struct FmtQ4_0 {
  static constexpr int kOffset = 8;
  static constexpr bool kUnsigned = true, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ4_0);
  static typename I::bytes weights(const uint8_t* b) { return I::expand16(b + offsetof(BlockQ4_0, qs)); }
  template <class W>
  static typename W::bytes weights2(const uint8_t* b0, const uint8_t* b1) {
    return W::expand16x2(b0 + offsetof(BlockQ4_0, qs), b1 + offsetof(BlockQ4_0, qs));
  }
};

// q5_0 / q5_1 codes: Q4_0's nibbles with the fifth bits from the little-endian qh.
template <class I>
typename I::bytes five_bit_codes(const uint8_t* qs, const uint8_t* qh_bytes) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  return I::with_bits32(I::expand16(qs), qh);
}

template <class W>
typename W::bytes five_bit_codes2(const uint8_t* b0, const uint8_t* b1, size_t qs, size_t qh) {
  return W::with_bits2(W::expand16x2(b0 + qs, b1 + qs), b0 + qh, b1 + qh);
}

template <class I>
struct FmtQ5_0 {
  static constexpr int kOffset = 16;
  static constexpr bool kUnsigned = true, kMin = false;
  static constexpr size_t kBytes = sizeof(BlockQ5_0);
  static typename I::bytes weights(const uint8_t* b) {
    return five_bit_codes<I>(b + offsetof(BlockQ5_0, qs), b + offsetof(BlockQ5_0, qh));
  }
  template <class W>
  static typename W::bytes weights2(const uint8_t* b0, const uint8_t* b1) {
    return five_bit_codes2<W>(b0, b1, offsetof(BlockQ5_0, qs), offsetof(BlockQ5_0, qh));
  }
};

template <class I>
struct FmtQ5_1 {
  static constexpr int kOffset = 0;
  static constexpr bool kUnsigned = true, kMin = true;
  static constexpr size_t kBytes = sizeof(BlockQ5_1);
  static typename I::bytes weights(const uint8_t* b) {
    return five_bit_codes<I>(b + offsetof(BlockQ5_1, qs), b + offsetof(BlockQ5_1, qh));
  }
  template <class W>
  static typename W::bytes weights2(const uint8_t* b0, const uint8_t* b1) {
    return five_bit_codes2<W>(b0, b1, offsetof(BlockQ5_1, qs), offsetof(BlockQ5_1, qh));
  }
  static float min(const uint8_t* b) { return block_scale<I>(b + offsetof(BlockQ5_1, m)); }
};

// Rows are read one at a time, front to back, so that each thread's weights are one sequential
// stream (as the float GEMV reads them, kernels_impl.h): four rows read side by side, block b of
// each in turn, are four interleaved streams that the hardware prefetcher follows poorly (1.3-2x
// slower; docs/measurements.md). The stream is also prefetched a fixed distance ahead, and the
// first stretch of a call's rows up front. The distance covers the memory latency at the rate two
// cores stream these formats (4 KiB left the LM head of the OCR decoder 10-15% below the rate 16
// KiB gives it; docs/benchmarks.md).
constexpr size_t kQPrefetchBytes = 16384;

// The cache lines of [p, p + bytes), asked into L2 (prefetcht1), not L1: the lines arrive far ahead
// of their use, where L1 would only hold them at the cost of lines in use, and a prefetch into L1
// holds one of its few fill buffers until the line is there (prefetcht0 streamed these formats
// 10-35% slower on an Intel Xeon; docs/benchmarks.md). Addresses past the matrix are formed as
// integers and only prefetched (which cannot fault). The instruction is written out: GCC 12 dropped
// __builtin_prefetch from the interleaved q6_k kernel's loops (no prefetch left in its code; its
// 1-row product streamed at 8 GB/s on one core where the row kernel read 12), the other kernels kept
// theirs. tests/kernels/prefetches_kept_test.sh checks every product kernel's code still holds one.
#if defined(__x86_64__)
inline void prefetch_line(uintptr_t p) { asm volatile("prefetcht1 (%0)" ::"r"(p)); }
#else
inline void prefetch_line(uintptr_t p) { __builtin_prefetch(reinterpret_cast<const void*>(p), 0, 2); }
#endif
inline void prefetch_lines(uintptr_t p, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 64) prefetch_line(p + o);
}

inline void prefetch_ahead(const uint8_t* block, size_t bytes) {
  prefetch_lines(reinterpret_cast<uintptr_t>(block) + kQPrefetchBytes, bytes);
}

// Each function below computes one weight row (nb blocks) against G activation rows (xs blocks
// apart) into out[g]. Each sum adds its blocks in the format's fixed order (above), so a row's
// result does not depend on G or the thread split. Integer sums are exact in any order, so a
// block's are split over several accumulators where that lets its multiply-adds overlap.

// q8_0 / q4_0 / q5_0 / q5_1: blocks of 32, f16 scale.
// A block's exact dot (its codes less the format's offset) with activation codes xv, in 8 i32 lanes.
template <class I, class F>
inline typename I::i32 block_dot_32(typename I::bytes wv, typename I::bytes xv) {
  // The offset's product starts the dot: one fused multiply-add on VNNI.
  if constexpr (F::kOffset != 0) return I::dot_u8s8_add(I::sub(I::set1(0), I::dot_u8s8(I::splat8(F::kOffset), xv)), wv, xv);
  else if constexpr (F::kUnsigned) return I::dot_u8s8(wv, xv);
  else return I::dot_u8s8(I::abs8(wv), I::sign8(xv, wv));
}

// Blocks b0 .. b0 + m - 1 of a row (b0 a multiple of 8, m <= 8) against G activation rows: each
// block's exact S (I::sums8 of its lanes) into lane b % 8 of its row's chains with the factor
// d_w d_x (one rounded product), lanes past m taking 0 times 0; q5_1's minima in block order.
template <class I, class F, int G>
inline void add_blocks_32(const uint8_t* w, int64_t b0, int64_t m, const ActQ8* x, int64_t xs, const float* dx, int64_t dxs,
                          typename I::f32* chains, float* mins) {
  typename I::i32 dots[G][8];
  for (int64_t i = 0; i < 8; ++i) {
    if (i >= m) {
      for (int g = 0; g < G; ++g) dots[g][i] = I::set1(0);
      continue;
    }
    const uint8_t* blk = w + static_cast<size_t>(b0 + i) * F::kBytes;
    prefetch_ahead(blk, F::kBytes);
    const typename I::bytes wv = F::weights(blk);
    for (int g = 0; g < G; ++g) {
      const ActQ8& a = x[g * xs + b0 + i];
      dots[g][i] = block_dot_32<I, F>(wv, I::load(a.q));
      if constexpr (F::kMin) mins[g] = std::fma(F::min(blk), a.s, mins[g]);
    }
  }
  const typename I::f32 dw = m == 8 ? I::template f16_strided8<F::kBytes>(w + static_cast<size_t>(b0) * F::kBytes)
                                    : I::template f16_strided<F::kBytes>(w + static_cast<size_t>(b0) * F::kBytes, m);
  for (int g = 0; g < G; ++g) chains[g] = I::fma_lanes(I::sums8(dots[g]), I::fmul(dw, I::load8(dx + g * dxs + b0)), chains[g]);
}

template <class I>
concept HasWide = requires { typename I::Wide; };

// Two activation blocks made ready, once per call, for the 512-bit rows of the formats of 32: their
// codes (b in the low half, b + 1 in the high) and the offset's products that start each lane's
// sum. Each row then reads two aligned vectors per pair of blocks, where it read two 40-byte ActQ8s
// (half their loads split across cache lines) and took the offset's products again (in cache one
// core read q8_0 1.2-1.4x faster so, q5_0 1.4x; docs/benchmarks.md).
struct alignas(64) ActPair {
  int8_t q[64];
  int32_t start[16];  // -K times each lane's 4 codes (K: kPairOffset)
};

// The offset each format's lanes start from: q8_0's signed codes are flipped to unsigned (+128) for
// the u8 x s8 product, q4_0 and q5_0 store theirs unsigned (+8, +16), q5_1 has a minimum instead.
template <class F>
constexpr int kPairOffset = F::kUnsigned ? F::kOffset : 128;

// The pairs of n activation rows of nb blocks (nb / 2 pairs each, row g's at g * (nb / 2)), in a
// buffer of the calling thread's, valid until its next call.
template <class W, class F>
const ActPair* pair_activations(const ActQ8* x, int64_t n, int64_t nb) {
  thread_local std::vector<ActPair> pairs;
  const int64_t np = nb / 2;
  pairs.resize(static_cast<size_t>(n * np));
  for (int64_t g = 0; g < n; ++g)
    for (int64_t p = 0; p < np; ++p) {
      const ActQ8 &a0 = x[g * nb + 2 * p], &a1 = x[g * nb + 2 * p + 1];
      ActPair& out = pairs[static_cast<size_t>(g * np + p)];
      const typename W::bytes q = W::load2(a0.q, a1.q);
      W::store(out.q, q);
      W::store(out.start, W::sub(W::zero(), W::dot_u8s8(W::splat8(kPairOffset<F>), q)));
    }
  return pairs.data();
}

// add_blocks_32 of 8 whole blocks with I::Wide: blocks 2p (low half) and 2p + 1 (high half) at once
// against the pairs of pair_activations (px, pxs pairs between activation rows), their lanes
// summed per block by W::pair_sums4. Signed q8_0 codes are flipped to unsigned, since AVX-512 has
// no byte sign instruction; the pair's start takes the flip's products off in the same exact lanes.
template <class I, class F, int G>
inline void add_blocks_32_wide(const uint8_t* w, int64_t b0, const ActQ8* x, int64_t xs, const ActPair* px, int64_t pxs,
                               const float* dx, int64_t dxs, typename I::f32* chains, float* mins) {
  using W = typename I::Wide;
  typename W::i32 dots[G][4];
  for (int p = 0; p < 4; ++p) {
    const int64_t b = b0 + 2 * p;
    const uint8_t* blk0 = w + static_cast<size_t>(b) * F::kBytes;
    const uint8_t* blk1 = blk0 + F::kBytes;
    prefetch_ahead(blk0, 2 * F::kBytes);
    typename W::bytes wv = F::template weights2<W>(blk0, blk1);
    if constexpr (!F::kUnsigned) wv = W::flip_sign_bit(wv);
    for (int g = 0; g < G; ++g) {
      const ActPair& a = px[g * pxs + b / 2];
      dots[g][p] = W::dot_u8s8_add(W::load(a.start), wv, W::load(a.q));
      if constexpr (F::kMin) {
        mins[g] = std::fma(F::min(blk0), x[g * xs + b].s, mins[g]);
        mins[g] = std::fma(F::min(blk1), x[g * xs + b + 1].s, mins[g]);
      }
    }
  }
  const typename I::f32 dw = I::template f16_strided8<F::kBytes>(w + static_cast<size_t>(b0) * F::kBytes);
  for (int g = 0; g < G; ++g) chains[g] = I::fma_lanes(W::pair_sums4(dots[g]), I::fmul(dw, I::load8(dx + g * dxs + b0)), chains[g]);
}

// Each activation row's block factors d_x, nb rounded up to 8 per row (0 past nb), in a buffer of
// the calling thread's, valid until its next call: a batch of 8 loads them as one vector.
inline int64_t dx_stride(int64_t nb) { return (nb + 7) / 8 * 8; }
inline const float* block_factors_32(const ActQ8* x, int64_t n, int64_t nb) {
  thread_local std::vector<float> dx;
  const int64_t stride = dx_stride(nb);
  dx.assign(static_cast<size_t>(n * stride), 0.0f);
  for (int64_t g = 0; g < n; ++g)
    for (int64_t b = 0; b < nb; ++b) dx[static_cast<size_t>(g * stride + b)] = x[g * nb + b].d;
  return dx.data();
}

// One row of nb blocks against G activation rows into out[g]: the contract's 8 chains, whole
// batches of 8 blocks 512 bits at a time where the traits have I::Wide, the rest (and everything
// on the other tables) 256 bits at a time; the same exact integers and the same float operations
// either way.
template <class I, class F, int G>
inline void dot_row_32(const uint8_t* w, int64_t nb, const ActQ8* x, int64_t xs, const ActPair* px, const float* dx,
                       float* out) {
  typename I::f32 chains[G];
  for (int g = 0; g < G; ++g) chains[g] = I::fzero();
  float mins[G] = {};  // q5_1: the blocks' minima against the activation sums
  const int64_t dxs = dx_stride(nb);
  int64_t b0 = 0;
  if constexpr (HasWide<I>)
    for (; b0 + 8 <= nb; b0 += 8) add_blocks_32_wide<I, F, G>(w, b0, x, xs, px, nb / 2, dx, dxs, chains, mins);
  for (; b0 < nb; b0 += 8) add_blocks_32<I, F, G>(w, b0, std::min<int64_t>(8, nb - b0), x, xs, dx, dxs, chains, mins);
  for (int g = 0; g < G; ++g) out[g] = I::hsum(chains[g]) + mins[g];
}

// Block b of a row of K-format blocks, prefetched ahead.
template <class Block>
inline const Block& k_block(const uint8_t* w, int64_t b) {
  const uint8_t* p = w + static_cast<size_t>(b) * sizeof(Block);
  prefetch_ahead(p, sizeof(Block));
  return *reinterpret_cast<const Block*>(p);
}

// The K formats' floats of the contract above per activation row, as lanes of one vector (lane
// g: row g's scaled sum, lane G + g: its minima, q4_k / q5_k only), so that a block's integer lanes
// of all G rows are summed together (block_sums: a few horizontal adds for all of them) and take
// one vector FMA.
template <class I, int G>
struct KSums {
  static_assert(G == 1 || G == 2 || G == 4);
  typename I::f32 acc;
  KSums() : acc(I::fzero()) {}
  // q4_k / q5_k: a block's exact sums (s[g]: the scaled dots, m[g]: the minima's, 8 lanes each)
  // against the activation rows a[g], with the block's factors d, dmin.
  void add(const typename I::i32* s, const typename I::i32* m, float d, float dmin, const ActQ8K* const* a) {
    float dx[G];
    for (int g = 0; g < G; ++g) dx[g] = a[g]->d;
    acc = I::fma_lanes(I::template block_sums<G>(s, m), I::template block_factors<G>(d, dmin, dx), acc);
  }
  // q6_k: a block's exact sums s[g], with its factor d (the minima's lanes stay 0).
  void add(const typename I::i32* s, float d, const ActQ8K* const* a) {
    typename I::i32 none[G];
    for (int g = 0; g < G; ++g) none[g] = I::set1(0);
    add(s, none, d, 0.0f, a);
  }
  void write(float* out, bool minima) const {
    alignas(32) float v[8];
    I::store8(v, acc);
    for (int g = 0; g < G; ++g) out[g] = minima ? v[g] + v[G + g] : v[g];
  }
};

// A q6_k block's lanes of unsigned codes' dots (isum[g]) against activation row g into `sums`: the
// offset of 32 taken off in the integers (32 times the scales against the 16-sums).
template <class I, int G>
inline void add_q6k_block(KSums<I, G>& sums, typename I::i32* isum, float d, const int8_t* scales, const ActQ8K* x,
                          int64_t xs, int64_t b) {
  const ActQ8K* a[G];
  for (int g = 0; g < G; ++g) {
    a[g] = &x[g * xs + b];
    isum[g] = I::sub_times32(isum[g], I::q6k_offset_lanes(scales, a[g]->bsums));
  }
  sums.add(isum, d, a);
}

// q4_k (kFifth = false) and q5_k: unsigned codes, 8 sub-blocks of 32 with 6-bit scales and mins.

// dot_row_k4 with I::Wide: chunks i = 2h (low half) and 2h + 1 (high half) at once; the scales
// and minima unpacked with vector instructions (k4_params), the two f16 factors converted at once.
template <class I, bool kFifth, int G>
inline void dot_row_k4_wide(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  using W = typename I::Wide;
  using Block = std::conditional_t<kFifth, BlockQ5K, BlockQ4K>;
  KSums<I, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
    const Block& blk = k_block<Block>(w, b);
    const typename W::k4_params sm = W::k4_scales_mins(blk.scales);
    const typename W::scales sv = W::k4_scales(sm);
    typename W::i32 lo_sum[G], hi_sum[G];
    for (int g = 0; g < G; ++g) lo_sum[g] = hi_sum[g] = W::zero();
    typename W::bytes qh{};
    if constexpr (kFifth) qh = W::bcast32(blk.qh);
    for (int h = 0; h < 2; ++h) {
      const typename W::bytes q = W::load(blk.qs + 64 * h);
      typename W::bytes lo = W::nibbles_lo(q), hi = W::nibbles_hi(q);
      if constexpr (kFifth) {
        lo = W::or_(lo, W::bit_set2(qh, static_cast<uint8_t>(1u << (4 * h)), static_cast<uint8_t>(1u << (4 * h + 2))));
        hi = W::or_(hi, W::bit_set2(qh, static_cast<uint8_t>(2u << (4 * h)), static_cast<uint8_t>(2u << (4 * h + 2))));
      }
      const auto s_lo = W::scale_pair(sv, 4 * h, 4 * h + 2), s_hi = W::scale_pair(sv, 4 * h + 1, 4 * h + 3);
      for (int g = 0; g < G; ++g) {
        const int8_t* xh = x[g * xs + b].q + 128 * h;
        lo_sum[g] = W::dot_scaled_add(lo_sum[g], lo, W::load2(xh, xh + 64), s_lo);
        hi_sum[g] = W::dot_scaled_add(hi_sum[g], hi, W::load2(xh + 32, xh + 96), s_hi);
      }
    }
    float d, dmin;
    W::f16_2(&blk.d, &blk.dmin, d, dmin);
    typename I::i32 dots[G], mins[G];
    const ActQ8K* a[G];
    for (int g = 0; g < G; ++g) {
      a[g] = &x[g * xs + b];
      dots[g] = W::fold(W::add(lo_sum[g], hi_sum[g]));
      mins[g] = W::k4_min_lanes(sm, a[g]->bsums32);
    }
    sums.add(dots, mins, d, dmin, a);
  }
  sums.write(out, true);
}

template <class I, bool kFifth, int G>
inline void dot_row_k4(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  if constexpr (HasWide<I>) {
    dot_row_k4_wide<I, kFifth, G>(w, nb, x, xs, out);
    return;
  }
  using Block = std::conditional_t<kFifth, BlockQ5K, BlockQ4K>;
  KSums<I, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
    const Block& blk = k_block<Block>(w, b);
    const ScalesMinsK4 sm = scales_mins_k4(blk.scales);
    const typename I::scales sv = I::scales_u8(sm.sc);
    typename I::i32 lo_sum[G], hi_sum[G];  // even / odd sub-blocks: two chains
    for (int g = 0; g < G; ++g) lo_sum[g] = hi_sum[g] = I::set1(0);
    typename I::bytes qh{};
    if constexpr (kFifth) qh = I::load(blk.qh);
    for (int i = 0; i < 4; ++i) {
      const typename I::bytes q = I::load(blk.qs + 32 * i);
      typename I::bytes lo = I::nibbles_lo(q), hi = I::nibbles_hi(q);
      if constexpr (kFifth) {
        lo = I::or_(lo, I::bit_set(qh, static_cast<uint8_t>(1u << (2 * i))));
        hi = I::or_(hi, I::bit_set(qh, static_cast<uint8_t>(2u << (2 * i))));
      }
      const typename I::i16 s_lo = I::scale_pair(sv, 2 * i, 2 * i), s_hi = I::scale_pair(sv, 2 * i + 1, 2 * i + 1);
      for (int g = 0; g < G; ++g) {
        const int8_t* xq = x[g * xs + b].q + 64 * i;
        lo_sum[g] = I::dot_scaled_add(lo_sum[g], lo, I::load(xq), s_lo);
        hi_sum[g] = I::dot_scaled_add(hi_sum[g], hi, I::load(xq + 32), s_hi);
      }
    }
    const float d = I::f16(blk.d), dmin = I::f16(blk.dmin);
    typename I::i32 dots[G], mins[G];
    const ActQ8K* a[G];
    for (int g = 0; g < G; ++g) {
      a[g] = &x[g * xs + b];
      dots[g] = I::add(lo_sum[g], hi_sum[g]);
      mins[g] = I::k4_min_lanes(sm.m, a[g]->bsums32);
    }
    sums.add(dots, mins, d, dmin, a);
  }
  sums.write(out, true);
}

// dot_row_q6k with I::Wide: quarters 0 and 1 (then 2 and 3) of each half at once.
template <class I, int G>
inline void dot_row_q6k_wide(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  using W = typename I::Wide;
  KSums<I, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6K& blk = k_block<BlockQ6K>(w, b);
    typename W::i32 sum[G];
    for (int g = 0; g < G; ++g) sum[g] = W::zero();
    for (int h = 0; h < 2; ++h) {
      const typename W::scales st = W::scales_i8(blk.scales + 8 * h);
      const typename W::bytes l = W::load(blk.ql + 64 * h), qh = W::bcast32(blk.qh + 32 * h);
      const typename W::bytes q01 = W::q6_2(W::nibbles_lo(l), qh, 4, 2), q23 = W::q6_2(W::nibbles_hi(l), qh, 0, -2);
      const auto s01 = W::scale_quads(st, 0), s23 = W::scale_quads(st, 4);
      for (int g = 0; g < G; ++g) {
        const int8_t* xh = x[g * xs + b].q + 128 * h;
        sum[g] = W::dot_scaled_add(sum[g], q01, W::load(xh), s01);
        sum[g] = W::dot_scaled_add(sum[g], q23, W::load(xh + 64), s23);
      }
    }
    const float d = I::f16(blk.d);
    typename I::i32 folded[G];
    for (int g = 0; g < G; ++g) folded[g] = W::fold(sum[g]);
    add_q6k_block<I, G>(sums, folded, d, blk.scales, x, xs, b);
  }
  sums.write(out, false);
}

// q6_k: 6-bit codes offset by 32, 16 groups of 16 with signed 8-bit scales.
template <class I, int G>
inline void dot_row_q6k(const uint8_t* w, int64_t nb, const ActQ8K* x, int64_t xs, float* out) {
  if constexpr (HasWide<I>) {
    dot_row_q6k_wide<I, G>(w, nb, x, xs, out);
    return;
  }
  KSums<I, G> sums;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6K& blk = k_block<BlockQ6K>(w, b);
    typename I::i32 half_sum[2][G];  // one chain per half of the block
    for (int h = 0; h < 2; ++h) {
      for (int g = 0; g < G; ++g) half_sum[h][g] = I::set1(0);
      const typename I::scales st = I::scales_i8(blk.scales + 8 * h);
      const typename I::bytes l0 = I::load(blk.ql + 64 * h), l1 = I::load(blk.ql + 64 * h + 32);
      const typename I::bytes qh = I::load(blk.qh + 32 * h);
      const typename I::bytes q[4] = {I::q6(I::nibbles_lo(l0), qh, 0), I::q6(I::nibbles_lo(l1), qh, 1),
                                      I::q6(I::nibbles_hi(l0), qh, 2), I::q6(I::nibbles_hi(l1), qh, 3)};
      for (int k = 0; k < 4; ++k) {
        const typename I::i16 sv = I::scale_pair(st, 2 * k, 2 * k + 1);
        for (int g = 0; g < G; ++g)
          half_sum[h][g] = I::dot_scaled_add(half_sum[h][g], q[k], I::load(x[g * xs + b].q + 128 * h + 32 * k), sv);
      }
    }
    const float d = I::f16(blk.d);
    typename I::i32 sum[G];
    for (int g = 0; g < G; ++g) sum[g] = I::add(half_sum[0][g], half_sum[1][g]);
    add_q6k_block<I, G>(sums, sum, d, blk.scales, x, xs, b);
  }
  sums.write(out, false);
}

// The format struct of each block format of 32.
template <class I, DType T>
using Fmt32 = std::conditional_t<T == DType::Q8_0, FmtQ8_0<I>,
                                 std::conditional_t<T == DType::Q4_0, FmtQ4_0<I>,
                                                    std::conditional_t<T == DType::Q5_0, FmtQ5_0<I>, FmtQ5_1<I>>>>;

// px: the activations' pairs (pair_activations) where the 512-bit rows of the formats of 32 take them.
template <class I, DType T, int G>
inline void dot_row_q(const uint8_t* w, int64_t nb, const void* x, int64_t xs, const ActPair* px, const float* dx, float* out) {
  const auto* a8 = static_cast<const ActQ8*>(x);
  const auto* a8k = static_cast<const ActQ8K*>(x);
  if constexpr (T < DType::Q4_K) dot_row_32<I, Fmt32<I, T>, G>(w, nb, a8, xs, px, dx, out);
  else if constexpr (T == DType::Q4_K) dot_row_k4<I, false, G>(w, nb, a8k, xs, out);
  else if constexpr (T == DType::Q5_K) dot_row_k4<I, true, G>(w, nb, a8k, xs, out);
  else dot_row_q6k<I, G>(w, nb, a8k, xs, out);
}

// QGemvFn (kernel_table.h): rows [r0, r1) of W against n quantised activation rows, one row at a
// time, up to kMaxQGroup activation rows per pass over it (later passes find the row in cache).
// Four rows per pass rather than two: a block's weights (nibbles, high bits, scales and minima)
// are unpacked once for all of them, and with several sequences per step the product is bound by
// that work, not by bytes (docs/measurements.md has the figures against two rows per pass).
template <class I, DType T>
void qgemv(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n, float* y,
           int64_t ldy) {
  constexpr bool k_format = T >= DType::Q4_K;
  const int64_t nb = in / (k_format ? 256 : 32);
  const size_t act_bytes = k_format ? sizeof(ActQ8K) : sizeof(ActQ8);
  const auto* xb = static_cast<const uint8_t*>(xq);
  static_assert(kMaxQGroup == 4, "a pass takes 4 activation rows, else 2, else 1");
  const ActPair* pairs = nullptr;
  if constexpr (!k_format && HasWide<I>) pairs = pair_activations<typename I::Wide, Fmt32<I, T>>(static_cast<const ActQ8*>(xq), n, nb);
  const float* dx = nullptr;
  if constexpr (!k_format) dx = block_factors_32(static_cast<const ActQ8*>(xq), n, nb);
  // The first stretch of the rows, which prefetch_ahead's lookahead never asks for.
  prefetch_lines(reinterpret_cast<uintptr_t>(w + static_cast<size_t>(r0) * rb),
                 std::min(kQPrefetchBytes, static_cast<size_t>(r1 - r0) * rb));
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * rb;
    for (int64_t g0 = 0; g0 < n;) {
      const void* x = xb + static_cast<size_t>(g0 * nb) * act_bytes;
      const ActPair* px = pairs ? pairs + g0 * (nb / 2) : nullptr;
      const float* dxg = dx ? dx + g0 * dx_stride(nb) : nullptr;
      float out[kMaxQGroup];
      const int64_t left = n - g0, gn = left >= 4 ? 4 : left >= 2 ? 2 : 1;
      if (gn == 4) dot_row_q<I, T, 4>(row, nb, x, nb, px, dxg, out);
      else if (gn == 2) dot_row_q<I, T, 2>(row, nb, x, nb, px, dxg, out);
      else dot_row_q<I, T, 1>(row, nb, x, nb, px, dxg, out);
      for (int64_t g = 0; g < gn; ++g) y[(g0 + g) * ldy + r] = out[g];
      g0 += gn;
    }
  }
}

// KernelTable::qgemv of an interleaved format where the traits have no kernel for it: each group
// back into its 16 rows, then the table's own product of the row format (so the same bits by
// construction).
// fn(rows, r) for every group of interleaved rows [r0, r1) of format X (whole groups; w a matrix's
// start), `rows` the group's 16 rows back in the row format (rb bytes apart), starting at row r.
template <DType X, class Fn>
void for_each_group_as_rows(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, Fn fn) {
  thread_local std::vector<uint8_t> rows;
  rows.resize(kGroupRows * rb);
  for (int64_t r = r0; r < r1; r += kGroupRows) {
    deinterleave_group(row_dtype(X), w + static_cast<size_t>(r) * rb, in / dtype_block_elems(row_dtype(X)), rows.data(), rb);
    fn(rows.data(), r);
  }
}

template <class I, DType X>
void qgemv_x16_via_rows(const uint8_t* w, size_t rb, int64_t in, int64_t r0, int64_t r1, const void* xq, int64_t n, float* y,
                        int64_t ldy) {
  for_each_group_as_rows<X>(w, rb, in, r0, r1, [&](const uint8_t* rows, int64_t r) {
    qgemv<I, row_dtype(X)>(rows, rb, in, 0, kGroupRows, xq, n, y + r, ldy);
  });
}

// The table's entry for interleaved format X: the traits' own kernel (I::qgemv_x16<X>) where they
// have one, else through the rows.
template <class I, DType X>
constexpr QGemvFn qgemv_x16_of() {
  if constexpr (requires { I::template qgemv_x16<X>; }) return I::template qgemv_x16<X>;
  else return &qgemv_x16_via_rows<I, X>;
}

// Prefill converts tiles of quantised weights to f32 for sgemm: the reference dequantisers suffice
// (sgemm's O(n) work per weight dwarfs the conversion).
template <DType T>
void rows_to_f32_blocks(const uint8_t* w, size_t rb, int64_t in, int64_t rows, float* dst) {
  for (int64_t r = 0; r < rows; ++r) convert_to_f32(T, w + static_cast<size_t>(r) * rb, dst + r * in, in);
}

// The same for interleaved rows: w at a group's start, `rows` whole groups.
template <DType X>
void rows_to_f32_x16(const uint8_t* w, size_t rb, int64_t in, int64_t rows, float* dst) {
  for_each_group_as_rows<X>(w, rb, in, 0, rows, [&](const uint8_t* plain, int64_t r) {
    rows_to_f32_blocks<row_dtype(X)>(plain, rb, in, kGroupRows, dst + r * in);
  });
}

}  // namespace
}  // namespace folio::kernels::detail
