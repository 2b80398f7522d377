#include "model/vision/line_finder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace folio {

namespace {

using Band = std::pair<int, int>;  // rows [first, second)

// numpy.percentile's default (linear) over the values a histogram counts.
double percentile(const std::array<uint64_t, 256>& hist, uint64_t total, double q) {
  const double index = q / 100.0 * double(total - 1);
  const uint64_t lo = uint64_t(std::floor(index)), hi = std::min(lo + 1, total - 1);
  const double t = index - double(lo);
  double a = 0, b = 0;
  uint64_t seen = 0;
  bool have_a = false;
  for (int v = 0; v < 256; ++v) {
    seen += hist[v];
    if (!have_a && seen > lo) a = v, have_a = true;
    if (seen > hi) {
      b = v;
      break;
    }
  }
  // numpy's lerp, which is exact at both ends.
  return t >= 0.5 ? b - (b - a) * (1 - t) : a + (b - a) * t;
}

std::vector<Band> ink_bands(const std::vector<uint8_t>& binary, int width, int height) {
  std::vector<Band> out;
  int start = -1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    const bool has = std::find(row, row + width, uint8_t(1)) != row + width;
    if (has && start < 0) start = y;
    if (!has && start >= 0) out.emplace_back(start, y), start = -1;
  }
  if (start >= 0) out.emplace_back(start, height);
  return out;
}

double median_height(const std::vector<Band>& bands) {
  std::vector<int> h;
  for (const auto& [a, b] : bands) h.push_back(b - a);
  std::sort(h.begin(), h.end());
  const size_t n = h.size();
  return n % 2 ? h[n / 2] : (h[n / 2 - 1] + h[n / 2]) / 2.0;
}

// A thin band close above the next one (dots, accents) joins it.
std::vector<Band> merge_thin(std::vector<Band> bands) {
  if (bands.empty()) return bands;
  const double typical = median_height(bands);
  std::vector<Band> out;
  for (size_t i = 0; i < bands.size(); ++i) {
    const auto [a, b] = bands[i];
    if (i + 1 < bands.size() && b - a < typical / 3 && bands[i + 1].first - b < typical / 3)
      bands[i + 1].first = a;
    else
      out.emplace_back(a, b);
  }
  return out;
}

int band_x_height(const std::vector<uint8_t>& binary, int width, const Band& band) {
  std::vector<int> p;
  for (int y = band.first; y < band.second; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    p.push_back(int(std::count(row, row + width, uint8_t(1))));
  }
  const int peak = *std::max_element(p.begin(), p.end());
  int top = -1, bottom = -1;
  for (int r = 0; r < int(p.size()); ++r)
    if (p[r] >= 0.5 * peak) {
      if (top < 0) top = r;
      bottom = r;
    }
  return std::max(2, bottom + 1 - top);
}

// Column runs [x0, x1) of the band split at gaps wider than kSegmentGap x-heights.
std::vector<std::pair<int, int>> band_segments(const std::vector<uint8_t>& binary, int width, const Band& band, int xh) {
  std::vector<uint8_t> has(width, 0);
  for (int y = band.first; y < band.second; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    for (int x = 0; x < width; ++x) has[x] |= row[x];
  }
  std::vector<std::pair<int, int>> out;
  int start = -1, prev = -1;
  for (int x = 0; x < width; ++x) {
    if (!has[x]) continue;
    if (start < 0) {
      start = prev = x;
      continue;
    }
    if (x - prev > LineFinderRule::kSegmentGap * xh) out.emplace_back(start, prev + 1), start = x;
    prev = x;
  }
  if (start >= 0) out.emplace_back(start, prev + 1);
  return out;
}

}  // namespace

int otsu_threshold(const uint8_t* gray, size_t count) {
  std::array<double, 256> hist{};
  for (size_t i = 0; i < count; ++i) hist[gray[i]] += 1;
  const double total = double(count);
  std::array<double, 256> w0{}, m0{};
  double cw = 0, cm = 0;
  for (int v = 0; v < 256; ++v) {
    cw += hist[v];
    cm += hist[v] * v;
    w0[v] = cw, m0[v] = cm;
  }
  const double mean = m0[255] / total;
  int best = 0;
  double best_between = -1;
  for (int v = 0; v < 256; ++v) {
    const double w1 = total - w0[v], d = mean * w0[v] - m0[v];
    double between = d * d / (w0[v] * w1);
    if (!std::isfinite(between)) between = 0;
    if (between > best_between) best_between = between, best = v;
  }
  return best;
}

std::vector<FoundLine> find_text_lines(const uint8_t* gray, int width, int height) {
  const size_t n = size_t(width) * height;
  const int level = otsu_threshold(gray, n);
  std::vector<uint8_t> binary(n);
  std::array<uint64_t, 256> page_hist{}, ink_hist{};
  uint64_t ink_count = 0;
  for (size_t i = 0; i < n; ++i) {
    binary[i] = gray[i] < level;
    ++page_hist[gray[i]];
    if (binary[i]) ++ink_hist[gray[i]], ++ink_count;
  }
  // Ink strength by the page's own paper and ink levels, in float as numpy computes it.
  const double bg = percentile(page_hist, n, 90), fg = ink_count ? percentile(ink_hist, ink_count, 5) : 0.0;
  const float bg32 = float(bg), range32 = float(std::max(16.0, bg - fg));
  std::vector<FoundLine> out;
  for (const Band& band : merge_thin(ink_bands(binary, width, height))) {
    if (band.second - band.first < 3) continue;
    const int xh = band_x_height(binary, width, band);
    for (const auto& [x0, x1] : band_segments(binary, width, band, xh)) {
      // The segment alone with 2 x-heights of blank margin, as line_finder.py's _segment.
      const int mw = x1 - x0 + 4 * xh, mh = band.second - band.first + 4 * xh;
      std::vector<float> seg(size_t(mw) * mh, 0.0f);
      for (int y = band.first; y < band.second; ++y)
        for (int x = x0; x < x1; ++x) {
          const float v = (bg32 - float(gray[size_t(y) * width + x])) / range32;
          seg[size_t(y - band.first + 2 * xh) * mw + (x - x0 + 2 * xh)] = std::clamp(v, 0.0f, 1.0f);
        }
      auto crop = crop_line(seg, mw, mh, 2 * xh, 2 * xh + band.second - band.first);
      if (!crop) continue;
      FoundLine line;
      line.x0 = x0, line.y0 = band.first, line.x1 = x1, line.y1 = band.second;
      line.band_x_height = xh;
      line.crop = std::move(*crop);
      out.push_back(std::move(line));
    }
  }
  return out;
}

}  // namespace folio
