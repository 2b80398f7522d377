#include "vision/line_finder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace folio {

namespace {

using Band = std::pair<int, int>;  // region rows [first, second)

// Rows and columns of a page region, for the band and segment rules.
struct Region {
  const InkPage& page;
  int x0, y0, x1, y1;
  bool ink_at(int x, int y) const { return page.binary[size_t(y0 + y) * page.width + x0 + x] != 0; }
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
};

std::vector<Band> ink_bands(const Region& r) {
  std::vector<Band> out;
  int start = -1;
  for (int y = 0; y < r.height(); ++y) {
    bool has = false;
    for (int x = 0; x < r.width() && !has; ++x) has = r.ink_at(x, y);
    if (has && start < 0) start = y;
    if (!has && start >= 0) out.emplace_back(start, y), start = -1;
  }
  if (start >= 0) out.emplace_back(start, r.height());
  return out;
}

double median_height(const std::vector<Band>& bands) {
  std::vector<int> h;
  for (const auto& [a, b] : bands) h.push_back(b - a);
  std::sort(h.begin(), h.end());
  const size_t n = h.size();
  return n % 2 ? h[n / 2] : (h[n / 2 - 1] + h[n / 2]) / 2.0;
}

// A thin band (dots, accents, an underscore row under a line without descenders) joins its nearer
// neighbour when that gap is small too; ties go to the band below (the dots' line).
std::vector<Band> merge_thin(std::vector<Band> bands) {
  if (bands.empty()) return bands;
  const double limit = median_height(bands) / 3;
  std::vector<Band> out;
  for (size_t i = 0; i < bands.size(); ++i) {
    const auto [a, b] = bands[i];
    if (b - a < limit) {
      const int up = out.empty() ? -1 : a - out.back().second;
      const int down = i + 1 < bands.size() ? bands[i + 1].first - b : -1;
      if (up >= 0 && up < limit && (down < 0 || up < down)) {
        out.back().second = b;
        continue;
      }
      if (down >= 0 && down < limit) {
        bands[i + 1].first = a;
        continue;
      }
    }
    out.emplace_back(a, b);
  }
  return out;
}

void split_band(const std::vector<int>& counts, Band band, int typical, std::vector<Band>& out) {
  const auto [a, b] = band;
  const int lo = a + 3 * typical / 4, hi = b - 3 * typical / 4;
  if (b - a < LineFinderRule::kTallBand * typical || hi <= lo) {
    out.push_back(band);
    return;
  }
  const int cut = int(std::min_element(counts.begin() + lo, counts.begin() + hi) - counts.begin());
  if (counts[cut] >= LineFinderRule::kValley * *std::max_element(counts.begin() + a, counts.begin() + b)) {
    out.push_back(band);
    return;
  }
  split_band(counts, {a, cut}, typical, out);
  split_band(counts, {cut, b}, typical, out);
}

// Two lines set tight, whose descenders and ascenders share rows (a dense scan's blur closes the
// gap), are two lines: a tall band is cut at its thinnest row when that row is nearly empty. A tall
// line of its own (a heading, a formula) is full in its middle.
std::vector<Band> split_touching(const Region& r, const std::vector<Band>& bands) {
  std::vector<int> heights;  // of what stays a line (specks of noise do not): typical >= 3, cuts inside
  for (const auto& [a, b] : bands)
    if (b - a >= 3) heights.push_back(b - a);
  if (heights.size() < 4) return bands;
  std::sort(heights.begin(), heights.end());
  const int typical = heights[heights.size() / 4];
  // Most regions have no tall band: the rows' ink is counted only for one that has.
  if (heights.back() < LineFinderRule::kTallBand * typical) return bands;
  std::vector<int> counts(r.height(), 0);
  for (int y = 0; y < r.height(); ++y)
    for (int x = 0; x < r.width(); ++x) counts[y] += r.ink_at(x, y);
  std::vector<Band> out;
  for (const Band& band : bands) split_band(counts, band, typical, out);
  return out;
}

// The core rows of the band's binary profile (line_crop.h), relative to the band.
std::optional<std::pair<int, int>> band_core(const Region& r, const Band& band) {
  std::vector<int> p;
  for (int y = band.first; y < band.second; ++y) {
    int n = 0;
    for (int x = 0; x < r.width(); ++x) n += r.ink_at(x, y);
    p.push_back(n);
  }
  return core_rows(p);
}

// Region column runs [x0, x1) of the band, split at gaps wider than kSegmentGap x-heights.
std::vector<std::pair<int, int>> band_segments(const Region& r, const Band& band, int xh) {
  std::vector<std::pair<int, int>> out;
  int start = -1, prev = -1;
  for (int x = 0; x < r.width(); ++x) {
    bool has = false;
    for (int y = band.first; y < band.second && !has; ++y) has = r.ink_at(x, y);
    if (!has) continue;
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

// The segment's ink alone with 2 x-heights of blank margin (line_finder.py's _segment), cropped.
std::optional<LineCrop> crop_segment(const Region& r, const Band& band, int s0, int s1, int xh,
                                     std::optional<std::pair<int, int>> core) {
  const int mw = s1 - s0 + 4 * xh, mh = band.second - band.first + 4 * xh;
  std::vector<float> seg(size_t(mw) * mh, 0.0f);
  for (int y = band.first; y < band.second; ++y)
    for (int x = s0; x < s1; ++x)
      seg[size_t(y - band.first + 2 * xh) * mw + (x - s0 + 2 * xh)] =
          r.page.ink[size_t(r.y0 + y) * r.page.width + r.x0 + x];
  return crop_line(seg, mw, mh, 2 * xh, 2 * xh + band.second - band.first, core);
}

}  // namespace

std::array<uint64_t, 256> byte_histogram(const uint8_t* bytes, size_t count) {
  // Four tables: a page is mostly one grey, and incrementing one bin back to back waits on the
  // store before it each time.
  std::array<std::array<uint32_t, 256>, 4> part{};
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {  // a table's bins stay below 2^32 for any page
    ++part[0][bytes[i]], ++part[1][bytes[i + 1]];
    ++part[2][bytes[i + 2]], ++part[3][bytes[i + 3]];
  }
  std::array<uint64_t, 256> hist{};
  for (; i < count; ++i) ++hist[bytes[i]];
  for (const auto& t : part)
    for (int v = 0; v < 256; ++v) hist[v] += t[v];
  return hist;
}

int otsu_threshold(const uint8_t* gray, size_t count) { return otsu_threshold(byte_histogram(gray, count), count); }

int otsu_threshold(const std::array<uint64_t, 256>& counts, size_t count) {
  std::array<double, 256> hist{};
  for (int v = 0; v < 256; ++v) hist[v] = double(counts[v]);
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

size_t count_bands_in(const InkPage& page, int x0, int y0, int x1, int y1) {
  return merge_thin(ink_bands(Region{page, x0, y0, x1, y1})).size();
}

std::vector<FoundLine> find_lines_in(const InkPage& page, int x0, int y0, int x1, int y1) {
  const Region r{page, x0, y0, x1, y1};
  std::vector<FoundLine> out;
  int prev_bottom = -1;
  for (const Band& band : split_touching(r, merge_thin(ink_bands(r)))) {
    if (band.second - band.first < 3) continue;
    const std::optional<std::pair<int, int>> core = band_core(r, band);
    const int xh = core ? std::max(2, core->second + 1 - core->first) : 2;
    FoundLine line;
    line.x_height = xh;
    line.gap_before = prev_bottom < 0 ? -1 : band.first - prev_bottom;
    const std::vector<std::pair<int, int>> segs = band_segments(r, band, xh);
    for (const auto& [s0, s1] : segs) {
      const bool narrow = segs.size() >= 2 && s1 - s0 <= LineFinderRule::kNarrowSegment * xh;
      auto crop = crop_segment(r, band, s0, s1, xh, narrow ? core : std::nullopt);
      if (crop) line.segments.push_back({x0 + s0, x0 + s1, std::move(*crop)});
    }
    if (line.segments.empty()) continue;
    line.x0 = line.segments.front().x0, line.x1 = line.segments.back().x1;
    line.y0 = y0 + band.first, line.y1 = y0 + band.second;
    prev_bottom = band.second;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace folio
