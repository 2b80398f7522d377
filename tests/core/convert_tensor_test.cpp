// convert_tensor split over a pool writes the same bytes as one thread, for every block format.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace folio {
namespace {

TEST(ConvertTensor, PoolSplitGivesTheSameBytes) {
  const int64_t rows = 37, cols = 512;  // rows not a multiple of the thread count
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = nd(rng);
  const TensorView src{"w", DType::F32, {rows, cols}, w.data()};
  ThreadPool pool(3);
  for (DType t : {DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const size_t bytes = static_cast<size_t>(rows) * dtype_row_bytes(t, cols);
    std::vector<uint8_t> one(bytes, 0xAB), split(bytes, 0xCD);
    convert_tensor(src, t, one.data());
    convert_tensor(src, t, split.data(), &pool);
    EXPECT_EQ(one, split) << dtype_name(t);
    // The conversion did something: the rows decode back near the input.
    std::vector<float> back(static_cast<size_t>(cols));
    convert_to_f32(t, split.data() + (rows - 1) * dtype_row_bytes(t, cols), back.data(), cols);
    double err = 0;
    for (int64_t c = 0; c < cols; ++c) err = std::max(err, std::fabs(double(back[c]) - w[(rows - 1) * cols + c]));
    EXPECT_LT(err, 0.6) << dtype_name(t);
  }
}

}  // namespace
}  // namespace folio
