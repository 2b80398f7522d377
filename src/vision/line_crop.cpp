#include "vision/line_crop.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/resize_float.h"

namespace folio {

namespace {

// Rows [first, last] whose count reaches fraction x ref.
std::pair<int, int> rows_reaching(const std::vector<int>& profile, double ref) {
  int first = -1, last = -1;
  for (int r = 0; r < int(profile.size()); ++r)
    if (profile[r] >= LineCropRule::kCoreFraction * ref) {
      if (first < 0) first = r;
      last = r;
    }
  return {first, last};
}

}  // namespace

std::optional<std::pair<int, int>> core_rows(const std::vector<int>& profile) {
  const int peak = profile.empty() ? 0 : *std::max_element(profile.begin(), profile.end());
  if (peak == 0) return std::nullopt;
  auto core = rows_reaching(profile, peak);
  if (core.second + 1 - core.first < LineCropRule::kCoreMinShare * double(profile.size())) {
    int rest = 0;
    for (int r = 0; r < int(profile.size()); ++r)
      if (r < core.first || r > core.second) rest = std::max(rest, profile[r]);
    if (rest > 0) core = rows_reaching(profile, rest);
  }
  return core;
}

std::optional<LineCrop> crop_line(const std::vector<float>& ink, int width, int height, int band_y0, int band_y1,
                                  std::optional<std::pair<int, int>> given_core) {
  FOLIO_CHECK_INPUT(0 <= band_y0 && band_y0 < band_y1 && band_y1 <= height && ink.size() == size_t(width) * height,
                    "crop_line: band outside the image");
  std::vector<int> profile(band_y1 - band_y0, 0);
  int left_ink = width, right_ink = -1;
  for (int y = band_y0; y < band_y1; ++y)
    for (int x = 0; x < width; ++x)
      if (ink[size_t(y) * width + x] > 0.5f) {
        ++profile[y - band_y0];
        left_ink = std::min(left_ink, x);
        right_ink = std::max(right_ink, x);
      }
  std::optional<std::pair<int, int>> core = core_rows(profile);
  if (!core) return std::nullopt;
  if (given_core) core = given_core;
  const auto [core_top, core_bottom] = *core;
  const double xh = std::max(2.0, double(core_bottom + 1 - core_top));
  const double top = band_y0 + core_top - LineCropRule::kAscend * xh;
  const double bottom = band_y0 + core_bottom + 1 + LineCropRule::kDescend * xh;
  const double left = left_ink - LineCropRule::kPad * xh, right = right_ink + 1 + LineCropRule::kPad * xh;
  const int t = int(std::floor(top)), b = int(std::ceil(bottom)), l = int(std::floor(left)), r = int(std::ceil(right));
  const int ch = b - t, cw = r - l;
  std::vector<float> canvas(size_t(ch) * cw, 0.0f);
  const int sy0 = std::max(t, band_y0), sy1 = std::min(b, band_y1), sx0 = std::max(l, 0), sx1 = std::min(r, width);
  for (int y = sy0; y < sy1; ++y)
    std::copy(ink.begin() + size_t(y) * width + sx0, ink.begin() + size_t(y) * width + sx1,
              canvas.begin() + size_t(y - t) * cw + (sx0 - l));
  // As lines.py computes it: the height's scale applied to the width, rounded up to whole frames.
  const double scale = double(LineCropRule::kHeight) / ch;
  const int64_t out_w = std::max<int64_t>(4, int64_t(std::ceil(cw * scale / 4)) * 4);
  LineCrop out;
  out.width = out_w;
  out.x_height = xh;
  out.ink = resize_bilinear_f32(canvas, cw, ch, int(out_w), int(LineCropRule::kHeight));
  for (float& v : out.ink) v = std::clamp(v, 0.0f, 1.0f);
  return out;
}

}  // namespace folio
