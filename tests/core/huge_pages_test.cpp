// touch_pages_quickly: memory already present is touched in a few stores, well above the rate that
// marks huge pages as slow, and what reads as zero still does.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/huge_pages.h"

namespace folio {
namespace {

TEST(HugePages, PresentMemoryIsTouchedQuicklyAndStaysZero) {
  std::vector<uint8_t> bytes(size_t{8} << 20, 0);  // zeroed by the vector: every page present
  EXPECT_TRUE(touch_pages_quickly(bytes.data(), bytes.size()));
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; }));
  advise_small_pages(bytes.data(), 0);  // an empty range is a no-op
}

}  // namespace
}  // namespace folio
