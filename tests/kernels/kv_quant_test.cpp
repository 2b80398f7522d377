// Quantised KV (q8, q4): round-trip error within the bound the format promises, and attention over
// quantised spans equal to attention over their dequantised copy.
#include "kernels/cpu/kv_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_features.h"

namespace folio::kernels {
namespace {

std::vector<float> random_rows(int64_t n, uint32_t seed, float outlier_every = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (i % static_cast<size_t>(outlier_every) == 0 ? 8.f : 1.f);
  return x;
}

// |x - dequant(quant(x))| <= half a quantisation step (+ f16 rounding of the parameters).
TEST(KVQuant, KeyRoundTripWithinHalfAStepPerChannel) {
  const int64_t rows = kKVKeyGroup, hd = 32;
  const std::vector<float> x = random_rows(rows * hd, 1);
  for (KVDType t : {KVDType::Q8, KVDType::Q4}) {
    std::vector<uint8_t> codes(static_cast<size_t>(rows) * kv_row_bytes(t, hd));
    std::vector<uint16_t> params(static_cast<size_t>(2 * hd));
    quantize_key_group(t, x.data(), rows, hd, codes.data(), params.data());
    std::vector<float> y(x.size());
    dequantize_key_rows(t, codes.data(), params.data(), rows, hd, y.data());
    for (int64_t c = 0; c < hd; ++c) {
      float lo = INFINITY, hi = -INFINITY, amax = 0;
      for (int64_t r = 0; r < rows; ++r) {
        lo = std::min(lo, x[r * hd + c]);
        hi = std::max(hi, x[r * hd + c]);
        amax = std::max(amax, std::fabs(x[r * hd + c]));
      }
      const float step = t == KVDType::Q8 ? amax / 127 : (hi - lo) / 15;
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_LE(std::fabs(x[r * hd + c] - y[r * hd + c]), 0.5f * step * 1.002f + 2e-3f * amax)
            << kv_dtype_name(t) << " channel " << c << " row " << r;
    }
  }
}

TEST(KVQuant, ValueRoundTripWithinHalfAStepPerToken) {
  const int64_t n = 64;
  for (KVDType t : {KVDType::Q8, KVDType::Q4})
    for (uint32_t seed = 0; seed < 20; ++seed) {
      const std::vector<float> x = random_rows(n, seed + 10);
      std::vector<uint8_t> codes(kv_row_bytes(t, n));
      uint16_t params[2];
      quantize_value_group(t, x.data(), n, codes.data(), params);
      std::vector<float> y(x.size());
      dequantize_value_group(t, codes.data(), params, n, y.data());
      const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
      const float amax = std::max(std::fabs(*lo), std::fabs(*hi));
      const float step = t == KVDType::Q8 ? amax / 127 : (*hi - *lo) / 15;
      for (int64_t i = 0; i < n; ++i) ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * step * 1.002f + 2e-3f * amax) << i;
    }
}

// A constant channel (zero range) is exact, not NaN.
TEST(KVQuant, ConstantGroupIsExact) {
  std::vector<float> x(64 * 4, 0.f);
  for (KVDType t : {KVDType::Q8, KVDType::Q4}) {
    std::vector<uint8_t> codes(64 * kv_row_bytes(t, 4));
    std::vector<uint16_t> params(8);
    quantize_key_group(t, x.data(), 64, 4, codes.data(), params.data());
    std::vector<float> y(x.size(), 1.f);
    dequantize_key_rows(t, codes.data(), params.data(), 64, 4, y.data());
    for (float v : y) EXPECT_EQ(v, 0.f);
  }
}

// Attention reading codes directly == attention over an f32 copy of the dequantised rows, on every
// instruction set the CPU has. Two spans (one partial), GQA, in three shapes: head_dim 128 with
// value groups of 64 channels (two per head; the full-size decoder), head_dim 32 with groups of 64
// spanning two heads (folio-mini-ocr), and head_dim 20, one group per head (channels left over
// after the vectors).
TEST(KVQuant, AttentionOverQuantisedSpansEqualsDequantisedCopy) {
  struct Shape { int64_t heads, kv_heads, hd, vg; };
  for (const Shape& sh : {Shape{4, 2, 128, 64}, Shape{4, 4, 32, 64}, Shape{2, 1, 20, 20}})
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      set_isa(isa);
      const int64_t heads = sh.heads, kv_heads = sh.kv_heads, hd = sh.hd, G = kKVKeyGroup, vg = sh.vg;
      const int64_t groups = kv_heads * hd / vg;
      const std::vector<float> q = random_rows(heads * hd, 5);
      for (KVDType t : {KVDType::Q8, KVDType::Q4}) {
        const size_t rb = kv_row_bytes(t, hd), np = static_cast<size_t>(kv_params_per_group(t));
        std::vector<KVSpan> qspans, fspans;
        std::vector<std::vector<uint8_t>> store;
        std::vector<std::vector<uint16_t>> pstore;
        std::vector<std::vector<float>> fstore;
        for (int64_t blk = 0; blk < 2; ++blk) {
          const std::vector<float> k = random_rows(kv_heads * G * hd, 100 + blk), v = random_rows(G * kv_heads * hd, 200 + blk);
          std::vector<uint8_t> kc(kv_heads * G * rb), vc(kv_heads * G * rb);
          std::vector<uint16_t> kp(kv_heads * np * hd), vp(G * groups * np);
          std::vector<float> kf(k.size()), vf(v.size());  // head-major dequantised copies
          for (int64_t h = 0; h < kv_heads; ++h) {  // k is [head][row][hd]
            quantize_key_group(t, &k[h * G * hd], G, hd, &kc[h * G * rb], &kp[h * np * hd]);
            dequantize_key_rows(t, &kc[h * G * rb], &kp[h * np * hd], G, hd, &kf[h * G * hd]);
          }
          // v is [row][head][hd]; a group's codes and values go to the head-major places of the
          // heads its channels belong to.
          std::vector<uint8_t> gc(kv_row_bytes(t, vg));
          std::vector<float> gf(static_cast<size_t>(vg));
          for (int64_t r = 0; r < G; ++r)
            for (int64_t g = 0; g < groups; ++g) {
              quantize_value_group(t, &v[r * kv_heads * hd + g * vg], vg, gc.data(), &vp[(r * groups + g) * np]);
              dequantize_value_group(t, gc.data(), &vp[(r * groups + g) * np], vg, gf.data());
              for (int64_t c = 0; c < vg; c += std::min(vg, hd)) {
                const int64_t ch = g * vg + c, h = ch / hd, off = ch % hd, n = std::min(vg, hd);
                std::copy_n(gc.begin() + static_cast<int64_t>(kv_row_bytes(t, c)), kv_row_bytes(t, n),
                            vc.begin() + h * G * static_cast<int64_t>(rb) + r * static_cast<int64_t>(rb) + static_cast<int64_t>(kv_row_bytes(t, off)));
                std::copy_n(gf.begin() + c, n, vf.begin() + h * G * hd + r * hd + off);
              }
            }
          const int64_t first = blk == 0 ? 0 : 9, n = blk == 0 ? G : 40;  // the second span is a partial group
          KVSpan qs;
          qs.k = kc.data() + first * rb;
          qs.v = vc.data() + first * rb;
          qs.tokens = n;
          qs.k_head_stride = qs.v_head_stride = G * rb;
          qs.k_type = qs.v_type = t;
          qs.k_params = kp.data();
          qs.v_param_stride = static_cast<size_t>(groups) * np;
          qs.v_params = vp.data() + first * qs.v_param_stride;
          qs.v_group = vg;
          KVSpan fs;
          fs.k = reinterpret_cast<const uint8_t*>(kf.data() + first * hd);
          fs.v = reinterpret_cast<const uint8_t*>(vf.data() + first * hd);
          fs.tokens = n;
          fs.k_head_stride = fs.v_head_stride = G * hd * 4;
          qspans.push_back(qs);
          fspans.push_back(fs);
          store.push_back(std::move(kc));
          store.push_back(std::move(vc));
          pstore.push_back(std::move(kp));
          pstore.push_back(std::move(vp));
          fstore.push_back(std::move(kf));
          fstore.push_back(std::move(vf));
        }
        AttentionShape shape{heads, kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
        std::vector<float> a(q.size()), b(q.size()), scratch(attend_scratch_floats(qspans.size() * G, heads, hd));
        attend(q.data(), qspans, shape, a.data(), 0, heads, scratch.data());
        attend(q.data(), fspans, shape, b.data(), 0, heads, scratch.data());
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_NEAR(a[i], b[i], 2e-5f + 2e-5f * std::fabs(b[i])) << kv_dtype_name(t) << " " << isa_name(active_isa()) << " head_dim " << hd << " " << i;
      }
    }
  set_isa(best_isa());
}

TEST(KVQuant, NamesParse) {
  EXPECT_EQ(parse_kv_dtype_name("Q8"), KVDType::Q8);
  EXPECT_EQ(parse_kv_dtype_name("q4"), KVDType::Q4);
  EXPECT_EQ(parse_kv_dtype_name("bf16"), KVDType::BF16);
  EXPECT_FALSE(parse_kv_dtype_name("q8_0"));
  EXPECT_FALSE(parse_kv_dtype_name("int3"));
}

}  // namespace
}  // namespace folio::kernels
