// SequenceKV with quantised storage: the same visible tokens as the float cache (read back through
// value markers), attention close to the f32 cache, and the byte savings from the pool's counters.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kv/kv_dtype.h"
#include "kv/kv_footprint.h"
#include "kv/sequence_kv.h"

namespace folio {
namespace {

using kernels::KVSpan;

constexpr int64_t kHeads = 4, kHd = 32, kRow = kHeads * kHd;  // the mini model's KV shape

// K rows random, V rows carry the position in channel 0 (so a quantised group still reads it back
// to within f16 rounding: the marker is the group's maximum).
void store_token(SequenceKV& kv, int64_t layer, int64_t pos, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> k(kRow), v(kRow, 0.f);
  for (auto& x : k) x = nd(rng);
  v[0] = static_cast<float>(pos);
  kv.store(layer, pos, k.data(), v.data());
}

// Positions visible to a query at pos, decoded from the value markers of head 0.
std::multiset<int64_t> visible_positions(const SequenceKV& kv, int64_t layer, int64_t pos) {
  std::vector<KVSpan> spans;
  kv.visible_spans(layer, pos, spans);
  std::multiset<int64_t> out;
  std::vector<float> row(kHd);
  for (const KVSpan& s : spans)
    for (int64_t t = 0; t < s.tokens; ++t) {
      if (kernels::kv_quantized(s.v_type)) {
        const uint8_t* codes = s.v + t * kernels::kv_row_bytes(s.v_type, kHd);
        kernels::dequantize_value_group(s.v_type, codes, s.v_params + t * s.v_param_stride, kHd, row.data());
      } else {
        convert_to_f32(kernels::kv_float_dtype(s.v_type), s.v + t * kernels::kv_row_bytes(s.v_type, kHd), row.data(), kHd);
      }
      out.insert(std::lround(row[0]));
    }
  return out;
}

struct Case {
  const char* types;
  int64_t window;
};

TEST(SequenceKVQuant, SameVisibleTokensAsTheFloatRing) {
  for (Case c : {Case{"q8", 128}, Case{"q4", 128}, Case{"q8", 100}, Case{"q4", 8}, Case{"q8", 200}}) {
    KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types(c.types)), 0);
    const int64_t P = 150, W = c.window;  // P ends inside a key group
    SequenceKV kv(pool, 1, KVPolicy::parse("rswa", W));
    std::mt19937 rng(1);
    kv.append(P, true);
    for (int64_t p = 0; p < P; ++p) store_token(kv, 0, p, rng);
    std::multiset<int64_t> ref;
    for (int64_t p = 0; p < 70; ++p) ref.insert(p);
    EXPECT_EQ(visible_positions(kv, 0, 69), ref) << c.types << " causal inside the reference";
    for (int64_t j = 0; j < 300; ++j) {
      const int64_t pos = kv.append(1, false);
      store_token(kv, 0, pos, rng);
      std::multiset<int64_t> want;
      for (int64_t p = 0; p < P; ++p) want.insert(p);
      for (int64_t b = std::max<int64_t>(0, j - W + 1); b <= j; ++b) want.insert(P + b);
      ASSERT_EQ(visible_positions(kv, 0, pos), want) << c.types << " W=" << W << " generated token " << j;
    }
  }
}

TEST(SequenceKVQuant, FullPolicyKeepsEveryTokenQuantised) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types("q4")), 0);
  SequenceKV kv(pool, 1, KVPolicy::parse("full", 16));
  std::mt19937 rng(2);
  kv.append(40, true);
  for (int64_t p = 0; p < 40; ++p) store_token(kv, 0, p, rng);
  for (int64_t j = 0; j < 100; ++j) store_token(kv, 0, kv.append(1, false), rng);
  std::multiset<int64_t> want;
  for (int64_t p = 0; p < 140; ++p) want.insert(p);
  EXPECT_EQ(visible_positions(kv, 0, 139), want);
}

// Attention through the quantised cache stays close to the f32 cache on the same rows.
TEST(SequenceKVQuant, AttentionCloseToF32) {
  std::mt19937 qrng(9);
  std::normal_distribution<float> nd;
  std::vector<float> q(kRow);
  for (auto& x : q) x = nd(qrng);
  auto run = [&](const char* types) {
    KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types(types)), 0);
    SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 128));
    std::mt19937 rng(3);
    std::normal_distribution<float> n2;
    kv.append(300, true);
    for (int64_t p = 0; p < 300; ++p) {
      std::vector<float> k(kRow), v(kRow);
      for (auto& x : k) x = n2(rng);
      for (auto& x : v) x = n2(rng);
      kv.store(0, p, k.data(), v.data());
    }
    std::vector<KVSpan> spans;
    kv.visible_spans(0, 299, spans);
    std::vector<float> out(kRow), scratch(kernels::attend_scratch_floats(300, kHeads, kHd));
    kernels::attend(q.data(), spans, {kHeads, kHeads, kHd, 1.f / std::sqrt(float(kHd))}, out.data(), 0, kHeads, scratch.data());
    return out;
  };
  const std::vector<float> f = run("f32"), q8 = run("q8"), q4 = run("q4");
  double e8 = 0, e4 = 0, norm = 0;
  for (int64_t i = 0; i < kRow; ++i) {
    norm += f[i] * f[i];
    e8 += (q8[i] - f[i]) * (q8[i] - f[i]);
    e4 += (q4[i] - f[i]) * (q4[i] - f[i]);
  }
  EXPECT_LT(std::sqrt(e8 / norm), 0.02) << "q8 relative error";
  EXPECT_LT(std::sqrt(e4 / norm), 0.25) << "q4 relative error";
  EXPECT_GT(std::sqrt(e4 / norm), std::sqrt(e8 / norm)) << "q4 must be coarser than q8";
}

// The targets at the mini model's shape (3 layers, 4 x 32) for a 20-page reference:
// q8 <= 55% and q4 <= 30% of bf16, from the pool's counters; and flat under rswa.
TEST(SequenceKVQuant, BytesAgainstBf16FromThePool) {
  auto peak = [](const std::string& types) {
    KVBlockPool pool(KVLayout(3, kHeads, kHd, parse_kv_types(types)), 0);
    SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 128));
    std::mt19937 rng(4);
    kv.append(6450, true);
    for (int64_t l = 0; l < 3; ++l)
      for (int64_t p = 0; p < 6450; ++p) store_token(kv, l, p, rng);
    size_t flat = 0;
    for (int64_t j = 0; j < 400; ++j) {
      const int64_t pos = kv.append(1, false);
      for (int64_t l = 0; l < 3; ++l) store_token(kv, l, pos, rng);
      if (j == 200) flat = kv.bytes();
      if (j > 200) {
        EXPECT_EQ(kv.bytes(), flat) << types;
      }
    }
    return pool.peak_bytes();
  };
  const double bf16 = static_cast<double>(peak("bf16")), q8 = static_cast<double>(peak("q8")),
               q4 = static_cast<double>(peak("q4"));
  EXPECT_LE(q8 / bf16, 0.55);
  EXPECT_LE(q4 / bf16, 0.30);
  EXPECT_GT(q4 / bf16, 0.2);  // codes alone are a quarter
  RecordProperty("q8_over_bf16", std::to_string(q8 / bf16));
  RecordProperty("q4_over_bf16", std::to_string(q4 / bf16));
  std::printf("q8/bf16 = %.4f  q4/bf16 = %.4f\n", q8 / bf16, q4 / bf16);
}

// A quantised region's group being filled keeps its keys in f16 (their scales are per channel over
// the whole group) but its values in their stored type from the start (per token, final when
// written): a generated token's value codes and parameters read from the staging block are the
// bytes it keeps once its group is quantised into the window's ring.
TEST(SequenceKVQuant, ValuesAreStagedInTheirStoredType) {
  KVBlockPool pool(KVLayout(1, kHeads, kHd, parse_kv_types("q4")), 0);
  SequenceKV kv(pool, 1, KVPolicy::parse("rswa", 128));
  std::mt19937 rng(6);
  kv.append(64, true);
  for (int64_t p = 0; p < 64; ++p) store_token(kv, 0, p, rng);
  // Head 0's value codes and parameters of the token whose marker is `marked`, in the spans a query
  // at `pos` sees whose keys are stored as `k_type` (f16: the staging block; q4: quantised groups).
  auto value_bytes = [&](int64_t pos, int64_t marked, KVDType k_type) {
    std::vector<KVSpan> spans;
    kv.visible_spans(0, pos, spans);
    std::vector<float> row(kHd);
    for (const KVSpan& s : spans) {
      if (s.k_type != k_type) continue;
      EXPECT_EQ(s.v_type, KVDType::Q4);
      for (int64_t t = 0; t < s.tokens; ++t) {
        const uint8_t* codes = s.v + t * kernels::kv_row_bytes(s.v_type, kHd);
        const uint16_t* params = s.v_params + t * s.v_param_stride;
        kernels::dequantize_value_group(s.v_type, codes, params, kHd, row.data());
        if (std::lround(row[0]) != marked) continue;
        std::vector<uint8_t> out(codes, codes + kernels::kv_row_bytes(s.v_type, kHd));
        out.insert(out.end(), reinterpret_cast<const uint8_t*>(params), reinterpret_cast<const uint8_t*>(params + 2));
        return out;
      }
    }
    return std::vector<uint8_t>{};
  };
  int64_t pos = 0;
  for (int j = 0; j < 10; ++j) store_token(kv, 0, pos = kv.append(1, false), rng);
  const std::vector<uint8_t> staged = value_bytes(pos, 68, KVDType::F16);
  ASSERT_FALSE(staged.empty()) << "position 68 is not in the staging block";
  for (int j = 10; j < 70; ++j) store_token(kv, 0, pos = kv.append(1, false), rng);  // its group closes at 127
  EXPECT_TRUE(value_bytes(pos, 68, KVDType::F16).empty()) << "position 68 is still staged";
  EXPECT_EQ(value_bytes(pos, 68, KVDType::Q4), staged);
  // What the window's staging costs: f16 keys beside q4 values, not f16 values.
  const KVFootprint f(pool, KVPolicy::parse("rswa", 128), 16);
  EXPECT_EQ(f.window_stage(), pool.block_bytes(kernels::kKVKeyGroup, KVDType::F16, KVDType::Q4));
  EXPECT_LT(f.window_stage(), pool.block_bytes(kernels::kKVKeyGroup, KVDType::F16, KVDType::F16));
}

TEST(SequenceKVQuant, KVTypesParseAndName) {
  EXPECT_EQ(parse_kv_types("q8").name(), "q8");
  const KVTypes t = parse_kv_types("bf16", "q8", "q4", "f16");
  EXPECT_EQ(t.ref_k, KVDType::Q8);
  EXPECT_EQ(t.ref_v, KVDType::Q4);
  EXPECT_EQ(t.win_k, KVDType::F16);
  EXPECT_EQ(t.name(), "k=q8,v=q4,window_k=f16,window_v=f16");
  try {
    parse_kv_types("q3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-dtype must be f32, f16, bf16, q8 or q4, got 'q3'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_kv_types("bf16", "", "", "q8_0"), Error);
  EXPECT_THROW(KVLayout(1, 1, 3, parse_kv_types("q4")), Error);  // odd head_dim
}

}  // namespace
}  // namespace folio
