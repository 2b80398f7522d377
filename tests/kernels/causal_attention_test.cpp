// kernels::attend_causal (a run of queries as matrix products) against kernels::attend (one query
// at a time, itself checked against a plain softmax in attention_test.cpp), over every KV dtype,
// with rows cut into uneven spans, several query blocks and key tiles, and grouped heads.
#include "kernels/cpu/causal_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/kv_quant.h"

namespace folio::kernels {
namespace {

constexpr int64_t kHeads = 4, kKvHeads = 2, kHd = 32;

// Keys and values of `rows` positions stored head-major in `t`, cut into spans of kKVKeyGroup rows
// (quantised keys share parameters per span) or of uneven sizes (float types).
struct Cache {
  KVDType t;
  int64_t rows;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> kp, vp;
  std::vector<KVSpan> spans;

  Cache(KVDType type, int64_t n, uint32_t seed) : t(type), rows(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> kf(static_cast<size_t>(kKvHeads * rows * kHd)), vf(kf.size());  // [head][row][hd]
    for (auto* x : {&kf, &vf})
      for (float& e : *x) e = nd(rng);
    const size_t rb = kv_row_bytes(t, kHd), head_stride = rb * static_cast<size_t>(rows);
    k.resize(kKvHeads * head_stride);
    v.resize(kKvHeads * head_stride);
    const int64_t np = kv_params_per_group(t), groups = (rows + kKVKeyGroup - 1) / kKVKeyGroup;
    if (kv_quantized(t)) {
      kp.resize(static_cast<size_t>(groups * kKvHeads * np * kHd));
      vp.resize(static_cast<size_t>(rows * kKvHeads * np));
    }
    for (int64_t h = 0; h < kKvHeads; ++h) {
      const float* kh = &kf[h * rows * kHd];
      const float* vh = &vf[h * rows * kHd];
      if (!kv_quantized(t)) {
        convert_from_f32(kv_float_dtype(t), kh, k.data() + h * head_stride, rows * kHd);
        convert_from_f32(kv_float_dtype(t), vh, v.data() + h * head_stride, rows * kHd);
        continue;
      }
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t r0 = g * kKVKeyGroup, n = std::min(kKVKeyGroup, rows - r0);
        quantize_key_group(t, kh + r0 * kHd, n, kHd, k.data() + h * head_stride + r0 * rb,
                           &kp[static_cast<size_t>((g * kKvHeads + h) * np * kHd)]);
      }
      for (int64_t r = 0; r < rows; ++r)
        quantize_value_group(t, vh + r * kHd, kHd, v.data() + h * head_stride + r * rb, &vp[static_cast<size_t>((r * kKvHeads + h) * np)]);
    }
    // Span boundaries: key groups for quantised keys, uneven cuts otherwise.
    std::vector<int64_t> cuts;
    if (kv_quantized(t)) {
      for (int64_t r = 0; r < rows; r += kKVKeyGroup) cuts.push_back(r);
    } else {
      for (int64_t r = 0, step = 5; r < rows; r += step, step = step % 37 + 11) cuts.push_back(r);
    }
    cuts.push_back(rows);
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      KVSpan s;
      s.k = k.data() + cuts[i] * rb;
      s.v = v.data() + cuts[i] * rb;
      s.tokens = cuts[i + 1] - cuts[i];
      s.k_head_stride = s.v_head_stride = head_stride;
      s.k_type = s.v_type = t;
      if (kv_quantized(t)) {
        s.k_params = &kp[static_cast<size_t>(cuts[i] / kKVKeyGroup * kKvHeads * np * kHd)];
        s.v_param_stride = static_cast<size_t>(kKvHeads * np);
        s.v_params = &vp[static_cast<size_t>(cuts[i]) * s.v_param_stride];
        s.v_group = kHd;
      }
      spans.push_back(s);
    }
  }

  // The spans' rows 0..p (what the query at position p sees).
  std::vector<KVSpan> upto(int64_t p) const {
    std::vector<KVSpan> out;
    int64_t r = 0;
    for (const KVSpan& s : spans) {
      if (r > p) break;
      KVSpan c = s;
      c.tokens = std::min(s.tokens, p + 1 - r);
      out.push_back(c);
      r += s.tokens;
    }
    return out;
  }
};

TEST(CausalAttention, EqualsOneQueryAtATimeForEveryKvType) {
  const int64_t first = 40, n = 300;  // several query blocks (the last partial), keys over two tiles
  const AttentionShape shape{kHeads, kKvHeads, kHd, 1.0f / std::sqrt(static_cast<float>(kHd))};
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  std::vector<float> q(static_cast<size_t>(n * kHeads * kHd));
  for (float& x : q) x = nd(rng);
  for (KVDType t : {KVDType::F32, KVDType::F16, KVDType::BF16, KVDType::Q8, KVDType::Q4}) {
    SCOPED_TRACE(kv_dtype_name(t));
    const Cache c(t, first + n + 7, 21);  // rows past the run are stored but must not be seen
    ThreadPool pool(3);
    std::vector<float> got(q.size(), -1.f);
    // attend_causal is told of exactly first + n rows, as the decoder gives it.
    const auto visible = c.upto(first + n - 1);
    attend_causal(q.data(), n, first, visible, shape, got.data(), pool);
    std::vector<float> scratch(attend_scratch_floats(first + n, kHeads, kHd)), want(static_cast<size_t>(kHeads * kHd));
    float worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      attend(&q[static_cast<size_t>(i * kHeads * kHd)], c.upto(first + i), shape, want.data(), 0, kHeads, scratch.data());
      for (int64_t j = 0; j < kHeads * kHd; ++j)
        worst = std::max(worst, std::fabs(want[j] - got[static_cast<size_t>(i * kHeads * kHd + j)]));
    }
    EXPECT_LT(worst, 2e-5f);
    // The pool's size does not change a bit.
    ThreadPool one(1);
    std::vector<float> again(q.size(), -2.f);
    attend_causal(q.data(), n, first, visible, shape, again.data(), one);
    EXPECT_EQ(again, got);
  }
}

TEST(CausalAttention, TooFewRowsIsAClearError) {
  const Cache c(KVDType::F32, 50, 1);
  const AttentionShape shape{kHeads, kKvHeads, kHd, 0.1f};
  std::vector<float> q(static_cast<size_t>(10 * kHeads * kHd)), out(q.size());
  ThreadPool pool(2);
  EXPECT_THROW(attend_causal(q.data(), 10, 45, c.spans, shape, out.data(), pool), Error);
}

}  // namespace
}  // namespace folio::kernels
