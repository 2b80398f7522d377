// The quantised GEMV entries of every kernel table (scalar, AVX2, AVX-512, AVX-512 VNNI with its
// 512-bit paths that take two blocks or two chunks per register) give the same bits for every
// block format, row width (odd and even block counts: the wide paths' tail) and number of
// activation rows (the passes of 4, 2 and 1 rows). matmul's tests check the product against a
// reference; this one pins the summation order that makes all tables agree.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/quant_blocks.h"
#include "kernel_test_util.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;

std::vector<const detail::KernelTable*> all_tables() {
  std::vector<const detail::KernelTable*> t{&detail::scalar_table()};
  if (best_isa() >= Isa::Avx2) t.push_back(&detail::avx2_table());
  if (best_isa() >= Isa::Avx512) t.push_back(&detail::avx512_plain_table());
  if (best_isa() >= Isa::Avx512 && __builtin_cpu_supports("avx512vnni")) t.push_back(&detail::avx512_vnni_table());
  return t;
}

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

TEST(QuantGemv, EveryTableGivesTheSameBits) {
  const std::vector<const detail::KernelTable*> tables = all_tables();
  if (tables.size() < 2) GTEST_SKIP() << "only the scalar kernels run on this CPU";
  uint32_t seed = 7;
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const int64_t block = dtype_block_elems(t), out = 19;
    for (int64_t blocks : {1, 2, 3, 5, 16, 17}) {
      const int64_t in = blocks * block;
      const testing::StoredWeight w = make_weight(t, out, in, seed++);
      for (int64_t n : {1, 2, 3, 4, 5, 7}) {
        const std::vector<uint8_t> xq = quantised_rows(t, random_floats(n * in, seed++), n, in);
        std::vector<float> want;
        for (size_t i = 0; i < tables.size(); ++i) {
          std::vector<float> y(static_cast<size_t>(n * out), -1.0f);
          tables[i]->qgemv[static_cast<int>(t) - static_cast<int>(DType::Q8_0)](w.bytes.data(), dtype_row_bytes(t, in), in, 0, out,
                                                                        xq.data(), n, y.data(), out);
          if (want.empty()) {
            want = y;
            continue;
          }
          ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
              << dtype_name(t) << " table " << i << " blocks " << blocks << " n " << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace folio::kernels
