#include "vision/page_background.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace folio {

namespace {

// out[i] = op over in[i - r .. i - r + w - 1] (clipped to [0, n)), r = w / 2, along one row. A
// window of 2k is two windows of k side by side, so doubling passes of one op per byte over
// contiguous bytes (they vectorise, where a per-block prefix and suffix would walk a byte at a
// time) reach the largest power of two p <= w; each output is the op of the two windows of p that
// cover its w. `a` and `b` are scratch.
template <class Op>
void running_extreme(const uint8_t* in, uint8_t* out, int n, int w, Op op, uint8_t identity, std::vector<uint8_t>& a,
                     std::vector<uint8_t>& b) {
  const int r = w / 2, padded = n + w - 1;  // the row with r identities on its left, w - 1 - r on its right
  a.assign(size_t(padded), identity);
  std::copy_n(in, n, a.begin() + r);
  b.resize(size_t(padded));
  int k = 1;  // a[j] = op over padded[j .. j + k - 1], for j + k <= padded
  for (; 2 * k <= w; k *= 2) {
    const uint8_t* __restrict s = a.data();
    uint8_t* __restrict d = b.data();
    for (int j = 0, m = padded - 2 * k + 1; j < m; ++j) d[j] = op(s[j], s[j + k]);
    a.swap(b);
  }
  const uint8_t* __restrict s = a.data();
  for (int i = 0; i < n; ++i) out[i] = op(s[i], s[i + w - k]);
}

// The same running extreme down the columns, a whole row at a time (rows are contiguous, so the
// element-wise ops vectorise; a column walk would stride the page): prefix and suffix rows per
// block of w rows, rows outside the page the identity.
template <class Op>
void running_extreme_down(const uint8_t* in, uint8_t* out, int width, int height, int w, Op op, uint8_t identity,
                          std::vector<uint8_t>& prefix, std::vector<uint8_t>& suffix) {
  const int r = w / 2, padded = height + 2 * r, m = (padded + w - 1) / w * w;
  const size_t row = size_t(width);
  prefix.assign(size_t(m) * row, identity);
  suffix.assign(size_t(m) * row, identity);
  // acc = op(prev, input row j); a missing prev or a row outside the page is the identity.
  auto fold_row = [&](uint8_t* acc, const uint8_t* prev, int j) {
    const uint8_t* src = j >= r && j < r + height ? in + size_t(j - r) * row : nullptr;
    if (prev && src)
      for (size_t x = 0; x < row; ++x) acc[x] = op(prev[x], src[x]);
    else if (prev || src)
      std::copy_n(prev ? prev : src, row, acc);
  };
  for (int b = 0; b < m; b += w) {
    for (int j = b; j < b + w; ++j) fold_row(&prefix[size_t(j) * row], j > b ? &prefix[size_t(j - 1) * row] : nullptr, j);
    for (int j = b + w - 1; j >= b; --j)
      fold_row(&suffix[size_t(j) * row], j < b + w - 1 ? &suffix[size_t(j + 1) * row] : nullptr, j);
  }
  for (int i = 0; i < height; ++i) {
    const uint8_t* s = &suffix[size_t(i) * row];
    const uint8_t* p = &prefix[size_t(i + w - 1) * row];
    uint8_t* o = out + size_t(i) * row;
    for (size_t x = 0; x < row; ++x) o[x] = op(s[x], p[x]);
  }
}

template <class Op>
void filter_2d(std::vector<uint8_t>& img, int width, int height, int w, Op op, uint8_t identity) {
  std::vector<uint8_t> tmp(img.size()), prefix, suffix;
  running_extreme_down(img.data(), tmp.data(), width, height, w, op, identity, prefix, suffix);  // axis 0 first, as the reference
  for (int y = 0; y < height; ++y)
    running_extreme(tmp.data() + size_t(y) * width, img.data() + size_t(y) * width, width, w, op, identity, prefix, suffix);
}

// quotient[b << 8 | g] = min(255, (255 * g + b' / 2) / b') with b' = max(b, 1): a lookup a pixel
// instead of an integer division.
std::array<uint8_t, 256 * 256> quotient_table() {
  std::array<uint8_t, 256 * 256> t{};
  for (int b = 0; b < 256; ++b)
    for (int g = 0; g < 256; ++g) {
      const int d = std::max(b, 1);
      t[size_t(b) << 8 | size_t(g)] = uint8_t(std::min(255, (255 * g + d / 2) / d));
    }
  return t;
}

}  // namespace

int background_window(int width) { return std::max(9, 2 * (width / 170) + 1); }

std::vector<uint8_t> remove_background(const uint8_t* gray, int width, int height) {
  const size_t n = size_t(width) * height;
  const int w = background_window(width);
  std::vector<uint8_t> bg(gray, gray + n);
  filter_2d(bg, width, height, w, [](uint8_t a, uint8_t b) { return std::max(a, b); }, uint8_t(0));
  filter_2d(bg, width, height, w, [](uint8_t a, uint8_t b) { return std::min(a, b); }, uint8_t(255));
  static const std::array<uint8_t, 256 * 256> quotient = quotient_table();
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = quotient[size_t(bg[i]) << 8 | gray[i]];
  return out;
}

}  // namespace folio
