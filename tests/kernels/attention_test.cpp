// kernels::attend against a plain double-precision softmax attention, for every KV dtype and ISA,
// with rows split over several spans (as reference blocks + a window ring are).
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {
namespace {

TEST(Attention, MatchesNaiveSoftmaxOverSpans) {
  const int64_t heads = 4, kv_heads = 2, hd = 20, rows = 37;  // GQA, head_dim not a multiple of 8
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> q(static_cast<size_t>(heads * hd)), k(static_cast<size_t>(rows * kv_heads * hd)),
      v(static_cast<size_t>(rows * kv_heads * hd));
  for (auto* vec : {&q, &k, &v})
    for (auto& x : *vec) x = nd(rng);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      // Store K/V head-major in the KV dtype ([kv_head][row][hd]), and build the reference from
      // the stored (rounded) values; k and v are generated row-major [row][kv_head][hd].
      const size_t hb = dtype_row_bytes(dt, hd), head_stride = rows * hb;
      std::vector<uint8_t> ks(kv_heads * head_stride), vs(kv_heads * head_stride);
      std::vector<float> kr(k.size()), vr(v.size());
      for (int64_t t = 0; t < rows; ++t)
        for (int64_t h = 0; h < kv_heads; ++h) {
          size_t src = static_cast<size_t>((t * kv_heads + h) * hd), dst = h * head_stride + t * hb;
          convert_from_f32(dt, &k[src], ks.data() + dst, hd);
          convert_from_f32(dt, &v[src], vs.data() + dst, hd);
          convert_to_f32(dt, ks.data() + dst, &kr[src], hd);
          convert_to_f32(dt, vs.data() + dst, &vr[src], hd);
        }
      const KVDType kt = kv_from_dtype(dt);
      auto span = [&](int64_t first, int64_t n) {
        KVSpan sp;
        sp.k = ks.data() + first * hb;
        sp.v = vs.data() + first * hb;
        sp.tokens = n;
        sp.k_head_stride = sp.v_head_stride = head_stride;
        sp.k_type = sp.v_type = kt;
        return sp;
      };
      std::vector<KVSpan> spans = {span(0, 5), span(5, 16), span(21, 16)};
      AttentionShape shape{heads, kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
      std::vector<float> out(q.size()), scratch(attend_scratch_floats(rows, heads, hd));
      attend(q.data(), spans, shape, out.data(), 0, heads, scratch.data());
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t kh = h / (heads / kv_heads);
        std::vector<double> sc(rows);
        double m = -1e300, sum = 0;
        for (int64_t t = 0; t < rows; ++t) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += double(q[h * hd + i]) * kr[(t * kv_heads + kh) * hd + i];
          sc[t] = d * shape.scale;
          m = std::max(m, sc[t]);
        }
        for (auto& x : sc) sum += (x = std::exp(x - m));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (int64_t t = 0; t < rows; ++t) o += sc[t] / sum * vr[(t * kv_heads + kh) * hd + i];
          EXPECT_NEAR(out[h * hd + i], o, 2e-5) << isa_name(active_isa()) << " " << dtype_name(dt) << " head " << h;
        }
      }
      // The decoder hands a thread any contiguous range of heads: each head's result must not
      // depend on the range it was computed in, bit for bit.
      for (int64_t h0 = 0; h0 < heads; ++h0)
        for (int64_t h1 = h0 + 1; h1 <= heads; ++h1) {
          std::vector<float> part(q.size(), -1.f);
          attend(q.data(), spans, shape, part.data(), h0, h1, scratch.data());
          for (int64_t i = h0 * hd; i < h1 * hd; ++i)
            ASSERT_EQ(part[i], out[i]) << isa_name(active_isa()) << " " << dtype_name(dt) << " heads " << h0 << ".." << h1;
        }
      // Nor on how the rows are cut into spans (blocks of any size; the kernel hands rows to the
      // row kernels in pieces of its own): one span, or one span per row, gives the same bits.
      std::vector<KVSpan> whole = {span(0, rows)}, singles;
      for (int64_t t = 0; t < rows; ++t) singles.push_back(span(t, 1));
      for (const auto* cut : {&whole, &singles}) {
        std::vector<float> again(q.size(), -1.f);
        attend(q.data(), *cut, shape, again.data(), 0, heads, scratch.data());
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_EQ(again[i], out[i]) << isa_name(active_isa()) << " " << dtype_name(dt) << " " << cut->size() << " spans";
      }
    }
  }
  set_isa(best_isa());
}

// A pass large enough to stream (kAttendStreamMinBytes), over spans of uneven sizes so the pieces
// the kernel cuts them into do not line up with span starts: the same result as the plain softmax,
// and the same bits whatever the cut (one span, uneven spans) and whatever the head range.
TEST(Attention, StreamedPassMatchesNaiveSoftmaxAndIsCutIndependent) {
  const int64_t heads = 4, kv_heads = 2, hd = 64, rows = 5000;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  std::vector<float> q(static_cast<size_t>(heads * hd)), k(static_cast<size_t>(kv_heads * rows * hd)),
      v(static_cast<size_t>(kv_heads * rows * hd));
  for (auto* vec : {&q, &k, &v})
    for (auto& x : *vec) x = nd(rng);
  // f32, head-major [kv_head][row][hd]: one head's keys are rows * 256 bytes.
  const size_t rb = static_cast<size_t>(hd) * sizeof(float), head_stride = static_cast<size_t>(rows) * rb;
  ASSERT_GE(head_stride, kAttendStreamMinBytes);  // even a one-head range streams
  auto span = [&](int64_t first, int64_t n) {
    KVSpan sp;
    sp.k = reinterpret_cast<const uint8_t*>(k.data()) + first * rb;
    sp.v = reinterpret_cast<const uint8_t*>(v.data()) + first * rb;
    sp.tokens = n;
    sp.k_head_stride = sp.v_head_stride = head_stride;
    return sp;
  };
  std::vector<KVSpan> uneven;
  for (int64_t first = 0, i = 0; first < rows; ++i) {
    const int64_t n = std::min<int64_t>(rows - first, 1 + (i * 7) % 23);
    uneven.push_back(span(first, n));
    first += n;
  }
  const std::vector<KVSpan> whole = {span(0, rows)};
  const AttentionShape shape{heads, kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  std::vector<float> scratch(attend_scratch_floats(rows, heads, hd));
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    std::vector<float> out(q.size()), again(q.size());
    attend(q.data(), uneven, shape, out.data(), 0, heads, scratch.data());
    for (int64_t h = 0; h < heads; ++h) {
      const float* kh = k.data() + (h / 2) * rows * hd;
      const float* vh = v.data() + (h / 2) * rows * hd;
      std::vector<double> sc(rows);
      double m = -1e300, sum = 0;
      for (int64_t t = 0; t < rows; ++t) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(q[h * hd + i]) * kh[t * hd + i];
        m = std::max(m, sc[t] = d * shape.scale);
      }
      for (auto& x : sc) sum += (x = std::exp(x - m));
      for (int64_t i = 0; i < hd; ++i) {
        double o = 0;
        for (int64_t t = 0; t < rows; ++t) o += sc[t] / sum * vh[t * hd + i];
        ASSERT_NEAR(out[h * hd + i], o, 2e-5) << isa_name(active_isa()) << " head " << h;
      }
    }
    attend(q.data(), whole, shape, again.data(), 0, heads, scratch.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(again[i], out[i]) << isa_name(active_isa()) << " one span";
    for (int64_t h0 = 0; h0 < heads; ++h0) {
      std::vector<float> part(q.size(), -1.f);
      attend(q.data(), uneven, shape, part.data(), h0, h0 + 1, scratch.data());
      for (int64_t i = h0 * hd; i < (h0 + 1) * hd; ++i) ASSERT_EQ(part[i], out[i]) << isa_name(active_isa()) << " head " << h0 << " alone";
    }
  }
  set_isa(best_isa());
}

}  // namespace
}  // namespace folio::kernels

namespace folio::kernels {
namespace {

// The vectorised exp behind softmax: relative error within a few ulp of std::exp over the range
// softmax uses (x - max <= 0, down to where exp underflows), on every ISA.
TEST(Attention, ExpSumMatchesStdExp) {
  std::vector<float> xs;
  for (float x = -90.f; x <= 0.f; x += 0.0137f) xs.push_back(x);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    std::vector<float> v(xs);
    double sum = detail::table_for(active_isa()).exp_sum(v.data(), static_cast<int64_t>(v.size()), 0.5f);
    double want_sum = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      // The argument is rounded to float first, as the kernel does; the exp itself is what is tested.
      double want = std::exp(static_cast<double>(xs[i] - 0.5f));
      want_sum += want;
      if (want > 1e-37) {
        EXPECT_NEAR(v[i], want, 4e-7 * want) << isa_name(active_isa()) << " x=" << xs[i];
      }
    }
    EXPECT_NEAR(sum, want_sum, 1e-5 * want_sum);
  }
  set_isa(best_isa());
}

}  // namespace
}  // namespace folio::kernels
