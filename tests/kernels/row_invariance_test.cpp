// Row invariance, operation by operation: under kernels::RowInvariantScope a row's matmul result is
// the same bits whether the call holds 1, 3, 8 or 17 rows, wherever the row sits among them, and
// whatever the pool's size; for every weight format the decoders read. The GEMM threshold is set
// to 2 so that without the scope those calls would take the sgemm path, and the control shows that
// path moves some row's bits (the test can fail).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;

constexpr int64_t kOut = 96, kIn = 512;
constexpr int64_t kSizes[] = {1, 3, 8, 17};

// Restores the GEMM threshold a test changed.
class GemmRowsGuard {
 public:
  explicit GemmRowsGuard(int64_t n) : saved_(matmul_gemm_min_rows()) { set_matmul_gemm_min_rows(n); }
  ~GemmRowsGuard() { set_matmul_gemm_min_rows(saved_); }

 private:
  int64_t saved_;
};

// The n-row input whose row `at` is `target` and whose other rows are other random rows.
std::vector<float> rows_around(const std::vector<float>& target, int64_t n, int64_t at, uint32_t seed) {
  std::vector<float> x = random_floats(n * kIn, seed);
  std::copy(target.begin(), target.end(), x.begin() + at * kIn);
  return x;
}

// The target row's output bits from an n-row call (row `at`), on `threads` threads.
std::vector<float> row_out(const TensorView& w, const std::vector<float>& target, int64_t n, int64_t at,
                           int threads, bool invariant) {
  ThreadPool pool(threads);
  const std::vector<float> x = rows_around(target, n, at, 100 + static_cast<uint32_t>(n));
  std::vector<float> y(static_cast<size_t>(n * kOut));
  const RowInvariantScope scope(invariant);
  matmul(w, x.data(), n, y.data(), pool);
  return {y.begin() + at * kOut, y.begin() + (at + 1) * kOut};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class RowInvariance : public ::testing::TestWithParam<DType> {};

TEST_P(RowInvariance, MatmulRowIsTheSameBitsInAnyBatchAndPool) {
  const GemmRowsGuard gemm(2);
  const auto w = make_weight(GetParam(), kOut, kIn, 7);
  const std::vector<float> target = random_floats(kIn, 11);
  const std::vector<float> alone = row_out(w.view, target, 1, 0, 1, true);
  for (int64_t n : kSizes)
    for (int64_t at : {int64_t{0}, n / 2, n - 1})
      for (int threads : {1, 2, 3})
        EXPECT_TRUE(same_bits(row_out(w.view, target, n, at, threads, true), alone))
            << dtype_name(GetParam()) << ": row " << at << " of " << n << " on " << threads << " threads";
}

TEST_P(RowInvariance, MatmulManyJobsAreTheSameBitsAsAlone) {
  const GemmRowsGuard gemm(2);
  const auto wa = make_weight(GetParam(), kOut, kIn, 21), wb = make_weight(GetParam(), kOut, kIn, 22);
  const std::vector<float> target = random_floats(kIn, 23);
  const std::vector<float> alone_a = row_out(wa.view, target, 1, 0, 1, true);
  const std::vector<float> alone_b = row_out(wb.view, target, 1, 0, 1, true);
  // Two jobs of different sizes share one pass (MoE experts, q/k/v): the target in each.
  for (int64_t n : kSizes) {
    const std::vector<float> xa = rows_around(target, n, n - 1, 31), xb = rows_around(target, 17, 0, 32);
    std::vector<float> ya(static_cast<size_t>(n * kOut)), yb(static_cast<size_t>(17 * kOut));
    const MatmulJob jobs[] = {{&wa.view, xa.data(), n, ya.data()}, {&wb.view, xb.data(), 17, yb.data()}};
    ThreadPool pool(2);
    const RowInvariantScope scope;
    matmul_many(jobs, pool);
    EXPECT_TRUE(same_bits({ya.end() - kOut, ya.end()}, alone_a)) << dtype_name(GetParam()) << " n " << n;
    EXPECT_TRUE(same_bits({yb.begin(), yb.begin() + kOut}, alone_b)) << dtype_name(GetParam()) << " n " << n;
  }
}

TEST_P(RowInvariance, WithoutTheScopeTheGemmPathMovesSomeRow) {
  const GemmRowsGuard gemm(2);
  const auto w = make_weight(GetParam(), kOut, kIn, 7);
  int moved = 0;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    const std::vector<float> target = random_floats(kIn, 50 + seed);
    moved += !same_bits(row_out(w.view, target, 17, 5, 2, false), row_out(w.view, target, 1, 0, 2, false));
  }
  EXPECT_GT(moved, 0) << dtype_name(GetParam()) << ": sgemm and GEMV rounded every row alike";
}

INSTANTIATE_TEST_SUITE_P(Weights, RowInvariance,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K,
                                           DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace folio::kernels
