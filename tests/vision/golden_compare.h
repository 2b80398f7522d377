// What the vision golden tests share: comparing our tensors with the official code's, and turning
// its NCHW feature maps into our token-major rows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace folio::testing {

struct Diff {
  float max_abs = 0;
  double rel_l2 = 0;
};

// a[i] vs b[i] over n values: the largest absolute difference and ||a - b|| / ||b||.
inline Diff compare(const float* a, const float* b, int64_t n) {
  Diff d;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    d.max_abs = std::max(d.max_abs, std::fabs(a[i] - b[i]));
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  d.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
  return d;
}

// Prints the agreement (the figures the fixture READMEs quote) and checks both bounds.
inline void expect_close(const std::string& what, const Diff& d, float max_abs, double rel_l2) {
  std::cout << "[golden] " << what << ": max |diff| " << d.max_abs << ", rel L2 " << d.rel_l2 << "\n";
  EXPECT_LE(d.max_abs, max_abs) << what;
  EXPECT_LE(d.rel_l2, rel_l2) << what;
}

// NCHW [C, g, g] -> token-major [g*g, C] (n = g*g).
inline std::vector<float> nchw_to_tokens(const float* x, int64_t C, int64_t n) {
  std::vector<float> t(static_cast<size_t>(C * n));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i * C + c)] = x[c * n + i];
  return t;
}

}  // namespace folio::testing
