#include "vision/deskew.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "vision/line_finder.h"

namespace folio {

namespace {

// std::floor for |v| < 2^53 without a libm call (plain x86-64 has no rounding instruction): the
// same value, exactly.
inline double floor_exact(double v) {
  const double t = static_cast<double>(static_cast<int64_t>(v));
  return t > v ? t - 1 : t;
}

}  // namespace

double skew_angle(const uint8_t* gray, int width, int height, ThreadPool* pool) {
  const size_t n = size_t(width) * height;
  const std::array<uint64_t, 256> hist = byte_histogram(gray, n);
  const int level = otsu_threshold(hist, n);
  int64_t ink = 0;
  for (int v = 0; v <= level; ++v) ink += static_cast<int64_t>(hist[v]);
  if (ink < DeskewRule::kMinPoints) return 0.0;
  const int64_t k = (ink + DeskewRule::kMaxPoints - 1) / DeskewRule::kMaxPoints;
  std::vector<double> xs, ys;
  int64_t seen = 0;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      if (gray[size_t(y) * width + x] <= level && seen++ % k == 0) xs.push_back(x), ys.push_back(y);
  const int steps = static_cast<int>(std::lround(DeskewRule::kMaxAngle / DeskewRule::kStep));
  std::vector<int> order;
  for (int i = 0; i <= steps; ++i) {
    order.push_back(-i);
    if (i) order.push_back(i);
  }
  // Each angle's score is independent of the others: they are computed in parallel, then chosen
  // in the fixed order above.
  std::vector<int64_t> scores(order.size());
  auto score_of = [&](int i) {
    // As Python's math.radians: degrees times (pi / 180).
    const double a = i * DeskewRule::kStep * (std::numbers::pi / 180.0), c = std::cos(a), s = std::sin(a);
    std::vector<int64_t> proj(xs.size());
    for (size_t p = 0; p < xs.size(); ++p) proj[p] = static_cast<int64_t>(floor_exact(ys[p] * c - xs[p] * s));
    const int64_t lo = *std::min_element(proj.begin(), proj.end()), hi = *std::max_element(proj.begin(), proj.end());
    std::vector<int64_t> counts(static_cast<size_t>(hi - lo + 1), 0);
    for (int64_t v : proj) ++counts[static_cast<size_t>(v - lo)];
    int64_t score = 0;
    for (int64_t c2 : counts) score += c2 * c2;
    return score;
  };
  auto score_range = [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) scores[static_cast<size_t>(j)] = score_of(order[static_cast<size_t>(j)]);
  };
  if (pool)
    pool->parallel_for(static_cast<int64_t>(order.size()), score_range);
  else
    score_range(0, static_cast<int64_t>(order.size()));
  int best = 0;
  int64_t best_score = -1;
  const int64_t level_score = scores[0];  // order[0] is angle 0
  for (size_t j = 0; j < order.size(); ++j)
    if (scores[j] > best_score) best = order[j], best_score = scores[j];
  return best_score >= DeskewRule::kMinGain * static_cast<double>(level_score) ? best * DeskewRule::kStep : 0.0;
}

std::vector<uint8_t> rotate_page(const uint8_t* gray, int width, int height, double degrees) {
  const double a = degrees * (std::numbers::pi / 180.0), c = std::cos(a), s = std::sin(a);
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  auto at = [&](int64_t y, int64_t x) -> double {
    return (x < 0 || y < 0 || x >= width || y >= height) ? 255.0 : gray[size_t(y) * width + size_t(x)];
  };
  std::vector<uint8_t> out(size_t(width) * height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double dx = x - cx, dy = y - cy;
      const double sx = cx + dx * c - dy * s, sy = cy + dx * s + dy * c;
      const double fx0 = floor_exact(sx), fy0 = floor_exact(sy);
      const auto x0 = static_cast<int64_t>(fx0), y0 = static_cast<int64_t>(fy0);
      const double fx = sx - fx0, fy = sy - fy0;
      // Inside the page (most pixels) the four neighbours are read without the edge tests.
      const bool inside = x0 >= 0 && y0 >= 0 && x0 + 1 < width && y0 + 1 < height;
      const uint8_t* p = inside ? gray + size_t(y0) * width + size_t(x0) : nullptr;
      const double v00 = inside ? p[0] : at(y0, x0), v01 = inside ? p[1] : at(y0, x0 + 1);
      const double v10 = inside ? p[width] : at(y0 + 1, x0), v11 = inside ? p[width + 1] : at(y0 + 1, x0 + 1);
      const double top = (1 - fx) * v00 + fx * v01;
      const double bottom = (1 - fx) * v10 + fx * v11;
      const double v = (1 - fy) * top + fy * bottom;
      out[size_t(y) * width + x] = static_cast<uint8_t>(std::clamp(floor_exact(v + 0.5), 0.0, 255.0));
    }
  return out;
}

}  // namespace folio
