// Internal to the CPU kernels: the maximum of a row of scores, for softmax.
#pragma once

#include <algorithm>
#include <cstdint>

namespace folio::kernels::detail {

// max(x[0..n)), n >= 1, in eight independent lanes the compiler keeps in one vector register (a
// plain running max is one dependent compare per element: GCC does not vectorise float max
// reductions without -ffast-math). NaN-free input assumed, as scores are.
inline float row_max(const float* x, int64_t n) {
  float lane[8];
  for (int k = 0; k < 8; ++k) lane[k] = x[0];
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane[k] = lane[k] > x[j + k] ? lane[k] : x[j + k];
  float m = lane[0];
  for (int k = 1; k < 8; ++k) m = std::max(m, lane[k]);
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

}  // namespace folio::kernels::detail
