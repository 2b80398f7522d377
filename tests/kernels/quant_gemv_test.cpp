// The quantised GEMV entries of every kernel table (scalar, AVX2, AVX-512, AVX-512 VNNI with its
// 512-bit paths that take two blocks or two chunks per register) give the same bits for every
// block format, row width (odd and even block counts: the wide paths' tail) and number of
// activation rows (the passes of 4, 2 and 1 rows). matmul's tests check the product against a
// reference; this one pins the summation order that makes all tables agree.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/quant_blocks.h"
#include "kernel_test_util.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;
using testing::all_tables;

// n activation rows of width `in`, quantised as the format's GEMV takes them.
std::vector<uint8_t> quantised_rows(DType t, const std::vector<float>& x, int64_t n, int64_t in) {
  const bool k = dtype_block_elems(t) == 256;
  const size_t row = static_cast<size_t>(in / (k ? 256 : 32)) * (k ? sizeof(ActQ8K) : sizeof(ActQ8));
  std::vector<uint8_t> q(row * static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) {
    if (k) quantize_act_q8k(x.data() + g * in, reinterpret_cast<ActQ8K*>(q.data() + g * row), in);
    else quantize_act_q8(x.data() + g * in, reinterpret_cast<ActQ8*>(q.data() + g * row), in);
  }
  return q;
}

// Rows [3, 37) of w against n activation rows on every table (with AMX int8 tiles on and off where
// the CPU has them, int8_amx_active: no format here takes them today, and none may change its
// bits with them), bit for bit.
void expect_tables_agree(DType t, const testing::StoredWeight& w, const std::vector<uint8_t>& xq, int64_t n,
                         const std::string& what) {
  const std::vector<const detail::KernelTable*> tables = all_tables();
  const int64_t out = w.view.shape[0], in = w.view.shape[1];
  std::vector<float> want;
  for (bool amx : {true, false}) {
    set_int8_amx(amx);
    for (size_t i = 0; i < tables.size(); ++i) {
      std::vector<float> y(static_cast<size_t>(n * out), -1.0f);
      const int entry = static_cast<int>(t) - static_cast<int>(DType::Q8_0);
      tables[i]->qgemv[entry](w.bytes.data(), dtype_row_bytes(t, in), in, 3, out, xq.data(), n, y.data(), out);
      if (want.empty()) {
        want = y;
        continue;
      }
      EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
          << dtype_name(t) << " table " << i << " " << what << " n " << n << " amx " << amx;
    }
  }
  set_int8_amx(true);
}

TEST(QuantGemv, EveryTableGivesTheSameBits) {
  if (all_tables().size() < 2) GTEST_SKIP() << "only the scalar kernels run on this CPU";
  uint32_t seed = 7;
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const int64_t block = dtype_block_elems(t), out = 37;
    for (int64_t blocks : {1, 2, 3, 5, 16, 17}) {
      const int64_t in = blocks * block;
      const testing::StoredWeight w = make_weight(t, out, in, seed++);
      for (int64_t n : {1, 2, 3, 4, 5, 7, 9, 17})
        expect_tables_agree(t, w, quantised_rows(t, random_floats(n * in, seed++), n, in), n,
                            "blocks " + std::to_string(blocks));
    }
  }
}

// q6_k at its extremes: every code 0 (-32 once offset), every scale -128, activations at -127: a
// block's exact sum is 256 x 128 x 32 x 127 in magnitude, past 2^24, where its float is rounded.
TEST(QuantGemv, Q6kBlocksPastTwoToThe24AgreeOnEveryTable) {
  if (all_tables().size() < 2) GTEST_SKIP() << "only the scalar kernels run on this CPU";
  const int64_t out = 37, in = 512, n = 3;
  testing::StoredWeight w = make_weight(DType::Q6_K, out, in, 3);
  auto* blocks = reinterpret_cast<BlockQ6K*>(w.bytes.data());
  for (int64_t b = 0; b < out * in / 256; ++b) {
    std::memset(blocks[b].ql, 0, sizeof(blocks[b].ql));
    std::memset(blocks[b].qh, 0, sizeof(blocks[b].qh));
    std::memset(blocks[b].scales, 0x80, sizeof(blocks[b].scales));
  }
  const std::vector<uint8_t> xq = quantised_rows(DType::Q6_K, std::vector<float>(n * in, -1.0f), n, in);
  expect_tables_agree(DType::Q6_K, w, xq, n, "saturated");
}

// The activation quantisers of every table write the reference's bytes (core/quant_blocks.h):
// random rows, exact halves (std::round takes them away from zero for ActQ8, lrint to even for
// ActQ8K), several elements of the largest magnitude with both signs (the first one's sign sets
// ActQ8K's scale), zero and negative-zero blocks.
TEST(QuantGemv, ActivationQuantisersWriteTheReferenceBytes) {
  const std::vector<const detail::KernelTable*> tables = all_tables();
  std::vector<std::vector<float>> rows;
  for (uint32_t seed = 1; seed <= 4; ++seed) rows.push_back(random_floats(512, seed));
  std::vector<float> halves(512);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<float>(static_cast<int>(i % 255) - 127) + (i % 2 ? 0.5f : 0.0f);
  halves[0] = 127.f, halves[256] = -127.f;  // scale 1 (ActQ8: d = 1; ActQ8K: iscale = -127 / -127 after the first)
  rows.push_back(halves);
  std::vector<float> ties = random_floats(512, 9);
  ties[5] = 4.0f, ties[17] = -4.0f, ties[300] = -4.0f, ties[400] = 4.0f;  // the first of equal magnitudes wins
  rows.push_back(ties);
  std::vector<float> zeros(512, 0.0f);
  for (size_t i = 256; i < 512; ++i) zeros[i] = -0.0f;
  rows.push_back(zeros);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<ActQ8> want32(16), got32(16);
    std::vector<ActQ8K> want256(2), got256(2);
    quantize_act_q8(rows[r].data(), want32.data(), 512);
    quantize_act_q8k(rows[r].data(), want256.data(), 512);
    for (size_t i = 0; i < tables.size(); ++i) {
      std::memset(got32.data(), 0xAB, got32.size() * sizeof(ActQ8));
      std::memset(got256.data(), 0xAB, got256.size() * sizeof(ActQ8K));
      tables[i]->quantize_act[0](rows[r].data(), got32.data(), 512);
      tables[i]->quantize_act[1](rows[r].data(), got256.data(), 512);
      EXPECT_EQ(0, std::memcmp(got32.data(), want32.data(), got32.size() * sizeof(ActQ8))) << "row " << r << " table " << i;
      EXPECT_EQ(0, std::memcmp(got256.data(), want256.data(), got256.size() * sizeof(ActQ8K))) << "row " << r << " table " << i;
    }
  }
}

}  // namespace
}  // namespace folio::kernels
