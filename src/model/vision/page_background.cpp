#include "model/vision/page_background.h"

#include <algorithm>
#include <cstddef>

namespace folio {

namespace {

// out[i] = op over in[i - r .. i + r] (clipped to [0, n)), for n values spaced `stride` apart.
// van Herk / Gil-Werman: blocks of w values, an in-block prefix and suffix, one op per output.
template <class Op>
void running_extreme(const uint8_t* in, uint8_t* out, int n, ptrdiff_t stride, int w, Op op, uint8_t identity,
                     std::vector<uint8_t>& prefix, std::vector<uint8_t>& suffix) {
  const int r = w / 2, padded = n + 2 * r, blocks = (padded + w - 1) / w, m = blocks * w;
  prefix.assign(size_t(m), identity);
  suffix.assign(size_t(m), identity);
  auto at = [&](int j) { return j >= r && j < r + n ? in[ptrdiff_t(j - r) * stride] : identity; };
  for (int b = 0; b < m; b += w) {
    uint8_t acc = identity;
    for (int j = b; j < b + w; ++j) prefix[j] = acc = op(acc, at(j));
    acc = identity;
    for (int j = b + w - 1; j >= b; --j) suffix[j] = acc = op(acc, at(j));
  }
  // The window of output i covers padded [i, i + w - 1]: a block's suffix from i, the next one's prefix.
  for (int i = 0; i < n; ++i) out[ptrdiff_t(i) * stride] = op(suffix[i], prefix[i + w - 1]);
}

template <class Op>
void filter_2d(std::vector<uint8_t>& img, int width, int height, int w, Op op, uint8_t identity) {
  std::vector<uint8_t> tmp(img.size()), prefix, suffix;
  for (int x = 0; x < width; ++x)  // along columns (axis 0), as the reference filters first
    running_extreme(img.data() + x, tmp.data() + x, height, width, w, op, identity, prefix, suffix);
  for (int y = 0; y < height; ++y)
    running_extreme(tmp.data() + size_t(y) * width, img.data() + size_t(y) * width, width, 1, w, op, identity, prefix,
                    suffix);
}

}  // namespace

int background_window(int width) { return std::max(9, 2 * (width / 170) + 1); }

std::vector<uint8_t> remove_background(const uint8_t* gray, int width, int height) {
  const size_t n = size_t(width) * height;
  const int w = background_window(width);
  std::vector<uint8_t> bg(gray, gray + n);
  filter_2d(bg, width, height, w, [](uint8_t a, uint8_t b) { return std::max(a, b); }, uint8_t(0));
  filter_2d(bg, width, height, w, [](uint8_t a, uint8_t b) { return std::min(a, b); }, uint8_t(255));
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int b = std::max<int>(bg[i], 1);
    out[i] = uint8_t(std::min(255, (int(gray[i]) * 255 + b / 2) / b));
  }
  return out;
}

}  // namespace folio
