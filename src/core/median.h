// The median of a list of numbers, as numpy.median computes it: the middle value of the sorted
// list, or the mean of the two middle ones; 0 for an empty list. Used where a C++ rule mirrors a
// Python reference (the page layout) and by the benchmarks.
#pragma once

#include <algorithm>
#include <vector>

namespace folio {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace folio
