#include "bench/bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/memory_stats.h"

namespace folio::kernels {
namespace {

TEST(Bandwidth, ReturnsAPlausibleRate) {
  ThreadPool pool(2);
  double gbs = measure_copy_bandwidth_gbs(pool, size_t{8} << 20, 2);
  EXPECT_TRUE(std::isfinite(gbs));
  EXPECT_GT(gbs, 0.1);     // even a slow VM copies faster than 100 MB/s
  EXPECT_LT(gbs, 100000);  // and slower than 100 TB/s
}

// Measured in a child process: a plausible rate, and this process's peak RSS does not grow by the
// child's buffers (2 x 64 MiB here). A bad size fails in the child and reads as 0, not as a crash.
TEST(Bandwidth, ChildMeasurementLeavesThisProcessMemoryAlone) {
  const size_t before = peak_rss_bytes();
  const double gbs = measure_copy_bandwidth_in_child_gbs(2, size_t{64} << 20, 2);
  EXPECT_GT(gbs, 0.1);
  EXPECT_LT(gbs, 100000);
  EXPECT_LT(peak_rss_bytes(), before + (size_t{32} << 20));
  EXPECT_EQ(measure_copy_bandwidth_in_child_gbs(1, 4096, 1), 0.0);
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
