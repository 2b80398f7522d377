#include "kernels/cpu/bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace folio::kernels {
namespace {

TEST(Bandwidth, ReturnsAPlausibleRate) {
  ThreadPool pool(2);
  double gbs = measure_copy_bandwidth_gbs(pool, size_t{8} << 20, 2);
  EXPECT_TRUE(std::isfinite(gbs));
  EXPECT_GT(gbs, 0.1);     // even a slow VM copies faster than 100 MB/s
  EXPECT_LT(gbs, 100000);  // and slower than 100 TB/s
}

TEST(Bandwidth, RejectsTinyBuffersAndNoRepeats) {
  ThreadPool pool(1);
  try {
    measure_copy_bandwidth_gbs(pool, 4096, 1);
    ADD_FAILURE() << "4 KiB buffer accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4096 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(measure_copy_bandwidth_gbs(pool, size_t{1} << 20, 0), Error);
}

}  // namespace
}  // namespace folio::kernels
