#include "vision/page_layout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "core/median.h"
#include "vision/dot_leaders.h"
#include "vision/page_background.h"

namespace folio {

namespace {

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
  return t >= 0.5 ? b - (b - a) * (1 - t) : a + (b - a) * t;  // numpy's lerp
}

// 1 on the pixels of rules: runs of ink at least kRuleH of the width long along a row, or kRuleV of
// the height down a column, measured on the binary page before anything is removed.
std::vector<uint8_t> rule_pixels(const std::vector<uint8_t>& binary, int width, int height) {
  std::vector<uint8_t> rule(binary.size(), 0);
  const int min_h = std::max(2, int(PageLayoutRule::kRuleH * width)), min_v = std::max(2, int(PageLayoutRule::kRuleV * height));
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    const uint8_t* end = row + width;
    for (const uint8_t* x = row; (x = static_cast<const uint8_t*>(std::memchr(x, 1, size_t(end - x))));) {
      const uint8_t* e = static_cast<const uint8_t*>(std::memchr(x, 0, size_t(end - x)));
      if (!e) e = end;
      if (e - x >= min_h) std::fill_n(rule.begin() + (x - binary.data()), e - x, uint8_t(1));
      x = e;
    }
  }
  // Vertical runs row by row (a column walk strides the whole page): run[x] counts the ink rows
  // ending at the current one. Whether any run ends long enough on a row is checked first, and the
  // counts updated after, each a loop over the row that vectorises.
  std::vector<uint16_t> run(size_t(width), 0);  // a page side is at most kMaxImageSide < 65536
  auto mark_ended = [&](const uint8_t* row, int y_end) {
    for (int x = 0; x < width; ++x)
      if ((!row || !row[x]) && run[x] >= min_v)
        for (int k = y_end - run[x]; k < y_end; ++k) rule[size_t(k) * width + x] = 1;
  };
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = binary.data() + size_t(y) * width;
    int ended = 0;
    for (int x = 0; x < width; ++x) ended |= !row[x] & (run[x] >= min_v);
    if (ended) mark_ended(row, y);
    for (int x = 0; x < width; ++x) run[x] = row[x] ? uint16_t(run[x] + 1) : uint16_t(0);
  }
  mark_ended(nullptr, height);
  return rule;
}

// Binary ink, ink strength, and rules removed from both, on the page with its background removed.
InkPage ink_page(const uint8_t* page, int width, int height) {
  const std::vector<uint8_t> normalised = remove_background(page, width, height);
  const uint8_t* gray = normalised.data();
  InkPage p;
  p.width = width, p.height = height;
  const size_t n = size_t(width) * height;
  const std::array<uint64_t, 256> page_hist = byte_histogram(gray, n);
  const int level = otsu_threshold(page_hist, n);
  p.binary.resize(n);
  for (size_t i = 0; i < n; ++i) p.binary[i] = gray[i] <= level;  // Otsu's level ends the dark class
  std::array<uint64_t, 256> ink_hist{};
  uint64_t ink_count = 0;
  for (int v = 0; v <= level; ++v) ink_hist[v] = page_hist[v], ink_count += page_hist[v];
  // In float, as numpy computes it from a float32 page and Python float levels.
  const double bg = percentile(page_hist, n, 90), fg = ink_count ? percentile(ink_hist, ink_count, 5) : 0.0;
  const float bg32 = float(bg), range32 = float(std::max(16.0, bg - fg));
  p.ink.resize(n);
  for (size_t i = 0; i < n; ++i) p.ink[i] = std::clamp((bg32 - float(gray[i])) / range32, 0.0f, 1.0f);
  const std::vector<uint8_t> rule = rule_pixels(p.binary, width, height);
  for (size_t i = 0; i < n; ++i) {  // written as selects, so that the loop vectorises
    p.binary[i] = rule[i] ? uint8_t(0) : p.binary[i];
    p.ink[i] = rule[i] ? 0.0f : p.ink[i];
  }
  return p;
}

bool row_has_ink(const InkPage& p, int y, int x0, int x1) {
  const uint8_t* row = p.binary.data() + size_t(y) * p.width;
  return x1 > x0 && std::memchr(row + x0, 1, size_t(x1 - x0)) != nullptr;
}

// The part of the page a gutter is looked for in: the whole page, or one side of its gutter over
// one zone's rows (layout.py passes such a part as a sub-array).
struct Window {
  int x0, x1, y0, y1;
  int width() const { return x1 - x0; }
};

// Rows of the window's bands (rows with ink in its columns) that are spanning for this gutter: ink
// in its middle third, which a spanning line crosses and a line overflowing its column (a long URL)
// does not reach. Indexed by page row; rows outside the window are 0.
std::vector<uint8_t> spanning_rows(const InkPage& p, const Window& w, std::pair<int, int> gutter) {
  const int third = (gutter.second - gutter.first) / 3;
  gutter = {gutter.first + third, gutter.second - third};
  std::vector<uint8_t> out(p.height, 0);
  for (int y = w.y0; y < w.y1;) {
    if (!row_has_ink(p, y, w.x0, w.x1)) { ++y; continue; }
    int e = y, in_gutter = 0;
    while (e < w.y1 && row_has_ink(p, e, w.x0, w.x1)) in_gutter += row_has_ink(p, e, gutter.first, gutter.second), ++e;
    if (in_gutter >= PageLayoutRule::kSpanRows * (e - y)) std::fill(out.begin() + y, out.begin() + e, 1);
    y = e;
  }
  return out;
}

struct SideBand {
  int y0, y1, first_x, last_x;  // rows [y0, y1) and the first and last columns with ink
};

// Bands of the window's rows not in `skip` (empty: none skipped) with ink in columns [x0, x1).
std::vector<SideBand> side_bands(const InkPage& p, const Window& w, const std::vector<uint8_t>& skip, int x0, int x1) {
  const auto skipped = [&](int y) { return !skip.empty() && skip[y]; };
  std::vector<SideBand> out;
  for (int y = w.y0; y < w.y1;) {
    if (skipped(y) || !row_has_ink(p, y, x0, x1)) { ++y; continue; }
    SideBand b{y, y, x1, x0};
    for (; b.y1 < w.y1 && !skipped(b.y1) && row_has_ink(p, b.y1, x0, x1); ++b.y1) {
      const uint8_t* row = p.binary.data() + size_t(b.y1) * p.width;
      b.first_x = int(std::find(row + x0, row + b.first_x, uint8_t(1)) - row);
      for (int x = x1 - 1; x > b.last_x; --x)
        if (row[x]) { b.last_x = x; break; }
    }
    out.push_back(b);
    y = b.y1;
  }
  return out;
}

// layout.py's _table_like: at least kTableAligned of the left side's bands have a right-side band
// centred within a quarter of the median band height of theirs, and one side's bands reach, at the
// median, less than kColumnFill of its width; or when kTableAligned of the right side's bands are at
// most kNumberSide times as wide as tall, each within a left-side band's rows give or take that
// tolerance (a table of contents' page numbers beside titles that fill their side, some of them
// wrapped; digits stand on the baseline, the titles' descenders go below it).
bool table_like(const InkPage& p, const Window& w, const std::vector<uint8_t>& spanning, int left,
                std::pair<int, int> gutter, int right) {
  const std::vector<SideBand> lb = side_bands(p, w, spanning, left, gutter.first);
  const std::vector<SideBand> rb = side_bands(p, w, spanning, gutter.second, right);
  if (lb.empty() || rb.empty()) return false;
  std::vector<double> heights, fill_l, fill_r;
  for (const SideBand& b : lb) heights.push_back(b.y1 - b.y0), fill_l.push_back(double(b.last_x + 1 - left) / (gutter.first - left));
  for (const SideBand& b : rb) heights.push_back(b.y1 - b.y0), fill_r.push_back(double(b.last_x + 1 - gutter.second) / (right - gutter.second));
  const double tol = std::max(1.0, median(heights) / 4);
  const auto aligned = std::count_if(lb.begin(), lb.end(), [&](const SideBand& l) {
    double nearest = 1e30;
    for (const SideBand& r : rb) nearest = std::min(nearest, std::fabs((r.y0 + r.y1) / 2.0 - (l.y0 + l.y1) / 2.0));
    return nearest <= tol;
  });
  const auto numbers = std::count_if(rb.begin(), rb.end(), [&](const SideBand& r) {
    return r.last_x + 1 - r.first_x <= PageLayoutRule::kNumberSide * (r.y1 - r.y0) &&
           std::any_of(lb.begin(), lb.end(), [&](const SideBand& l) { return l.y0 - tol <= r.y0 && r.y1 <= l.y1 + tol; });
  });
  return (double(aligned) / double(lb.size()) >= PageLayoutRule::kTableAligned &&
          std::min(median(fill_l), median(fill_r)) < PageLayoutRule::kColumnFill) ||
         double(numbers) / double(rb.size()) >= PageLayoutRule::kTableAligned;
}

// layout.py's _widest_run: the widest run of columns in [lo, hi) where `on` holds (the first of
// equals), or nullopt.
template <typename On>
std::optional<std::pair<int, int>> widest_run(int lo, int hi, On on) {
  int best0 = -1, best1 = -1, start = -1;
  for (int x = lo; x <= hi; ++x) {
    const bool in_run = x < hi && on(x);
    if (in_run && start < 0) start = x;
    if (!in_run && start >= 0) {
      if (best0 < 0 || x - start > best1 - best0) best0 = start, best1 = x;
      start = -1;
    }
  }
  if (best0 < 0) return std::nullopt;
  return std::pair{best0, best1};
}

// layout.py's _clean_gutter: the widest run of page columns in [lo, hi) whose projection is 0, at
// least kCleanGutterMin x the page wide. A reference card's columns may stand closer than
// kGutterMin, and their ragged lines fill the quiet run around such a gutter, but nothing crosses it.
std::optional<std::pair<int, int>> clean_gutter(const std::vector<int>& proj, int lo, int hi, int page_width) {
  const auto best = widest_run(lo, hi, [&](int x) { return proj[x] == 0; });
  if (!best || best->second - best->first < PageLayoutRule::kCleanGutterMin * page_width) return std::nullopt;
  return best;
}

// layout.py's _column_ink: the window's projection `proj` without the bands (of the window's rows)
// whose ink lies within columns [lo, hi): a centred page number or short heading stands in a
// gutter's columns without crossing a column's lines.
std::vector<int> column_ink(const InkPage& p, const Window& w, int lo, int hi, std::vector<int> proj) {
  for (const SideBand& b : side_bands(p, w, {}, w.x0, w.x1))
    if (b.first_x >= lo && b.last_x < hi)
      for (int y = b.y0; y < b.y1; ++y)
        for (int x = b.first_x; x <= b.last_x; ++x) proj[x] -= p.binary[size_t(y) * p.width + x];
  return proj;
}

// layout.py's _flush_left: whether the window's bands right of the clean gutter start at its edge
// (within a third of its width, at least 2 pixels: a scan's lines drift with what tilt is left):
// kFlushLeft of them or more, and half of them unless the gutter is a page's gutter wide
// (kGutterMin). A column's lines, or its headings over indented paragraphs, are set flush left,
// while the space between two words of a title that falls in a wide gutter has the column's lines
// starting further right.
bool flush_left(const InkPage& p, const Window& w, std::pair<int, int> gutter, int right) {
  const int near = std::max(2, (gutter.second - gutter.first) / 3);
  const std::vector<SideBand> bands = side_bands(p, w, {}, gutter.second, right);
  const auto flush = std::count_if(bands.begin(), bands.end(), [&](const SideBand& b) { return b.first_x - gutter.second <= near; });
  const bool wide = gutter.second - gutter.first >= PageLayoutRule::kGutterMin * p.width;
  return flush >= PageLayoutRule::kFlushLeft && (wide || 2 * size_t(flush) >= bands.size());
}

// layout.py's _lines_on_both_sides: both sides of the clean gutter hold kSplitMinBands lines (not a
// word space of a lone line).
bool lines_on_both_sides(const InkPage& p, const Window& w, int left, std::pair<int, int> gutter, int right) {
  const size_t least = PageLayoutRule::kSplitMinBands;
  return count_bands_in(p, left, w.y0, gutter.first, w.y1) >= least &&
         count_bands_in(p, gutter.second, w.y0, right, w.y1) >= least;
}

// layout.py's _quiet_gutter: the widest run of columns in [lo, hi) with ink in at most kGutterInk of
// the rows with ink (nullopt when none is kGutterMin wide), or within it the run free of ink outside
// spanning rows around its middle when that is kGutterMin wide. `proj` is overwritten.
std::optional<std::pair<int, int>> quiet_gutter(const InkPage& p, const Window& w, std::vector<int>& proj, int lo,
                                                int hi, int ink_rows) {
  const auto best = widest_run(lo, hi, [&](int x) { return proj[x] <= PageLayoutRule::kGutterInk * ink_rows; });
  if (!best || best->second - best->first < PageLayoutRule::kGutterMin * w.width()) return std::nullopt;
  const auto [best0, best1] = *best;
  // Tighter where a justified line or a hanging comma enters the quiet run, wider where a spanning
  // title's strokes cut it short.
  const std::pair<int, int> rough{best0, best1};
  const std::vector<uint8_t> spanning = spanning_rows(p, w, rough);
  std::fill(proj.begin(), proj.end(), 0);
  for (int y = w.y0; y < w.y1; ++y)
    if (!spanning[y])
      for (int x = w.x0; x < w.x1; ++x) proj[x] += p.binary[size_t(y) * p.width + x];
  int g0 = (best0 + best1) / 2, g1 = g0;
  if (proj[g0] != 0) return rough;
  while (g0 > lo && proj[g0 - 1] == 0) --g0;
  while (g1 < hi && proj[g1] == 0) ++g1;
  if (g1 - g0 >= PageLayoutRule::kGutterMin * w.width()) return std::pair{g0, g1};
  return rough;
}

// layout.py's _columns_on_both_sides: whether the gutter parts columns of text.
bool columns_on_both_sides(const InkPage& p, const Window& w, int ink_rows, int left, std::pair<int, int> gutter,
                           int right, bool table_rule, double both_sides) {
  // Two columns fill rows on both sides of the gutter and are crossed by few lines; a one-column
  // page of short lines, or whose table leaves a quiet strip, is not two columns.
  const std::vector<uint8_t> crossing = spanning_rows(p, w, gutter);
  int both = 0, crossed = 0;
  for (int y = w.y0; y < w.y1; ++y) {
    if (crossing[y]) {
      ++crossed;
      continue;
    }
    both += row_has_ink(p, y, left, gutter.first) && row_has_ink(p, y, gutter.second, right);
  }
  if (both < both_sides * ink_rows || 2 * crossed > both) return false;
  // ... and set their lines each on its own: rows that pair up across the gutter, with a short
  // side, are a table without rules (a name and its description, a contents page's titles and page
  // numbers), read row by row.
  return !(table_rule && table_like(p, w, crossing, left, gutter, right));
}

// The window's gutter in page columns, or nullopt (layout.py's find_gutter on the window's pixels).
// `within_columns`: the window is one side of a page's gutter, where a gutter parting it into
// sides of equal width (kEqualSides) is a grid of columns even when their lines pair up row by row
// like a table's (a reference card's columns share their leading).
std::optional<std::pair<int, int>> find_gutter(const InkPage& p, const Window& w, bool within_columns) {
  int ink_rows = 0, left = w.x1, right = -1;
  std::vector<int> proj(p.width, 0);
  for (int y = w.y0; y < w.y1; ++y) {
    ink_rows += row_has_ink(p, y, w.x0, w.x1);
    for (int x = w.x0; x < w.x1; ++x) proj[x] += p.binary[size_t(y) * p.width + x];
  }
  for (int x = w.x0; x < w.x1; ++x)
    if (proj[x]) left = std::min(left, x), right = std::max(right, x);
  if (ink_rows == 0) return std::nullopt;
  ++right;
  const int lo = left + (right - left) / 4, hi = right - (right - left) / 4;
  const auto is_columns = [&](std::pair<int, int> g, double both_sides) {
    const int l = g.first - left, r = right - g.second;
    const bool grid = within_columns && std::abs(l - r) <= PageLayoutRule::kEqualSides * std::max(l, r);
    return columns_on_both_sides(p, w, ink_rows, left, g, right, !grid, both_sides);
  };
  // A clean gutter first (a card's close columns, whose ragged lines leave no wide quiet run) when a
  // column starts at its right edge and lines stand on both sides (then a short second column, a
  // document's last page, has ink beside the first on fewer rows: kBothSidesClean); else the run
  // free of ink outside spanning rows around the quiet run's middle; else the quiet run itself.
  const auto clean = clean_gutter(column_ink(p, w, lo, hi, proj), lo, hi, p.width);
  if (clean && flush_left(p, w, *clean, right) && lines_on_both_sides(p, w, left, *clean, right) &&
      is_columns(*clean, PageLayoutRule::kBothSidesClean))
    return clean;
  const std::optional<std::pair<int, int>> gutter = quiet_gutter(p, w, proj, lo, hi, ink_rows);
  if (!gutter || !is_columns(*gutter, PageLayoutRule::kBothSides)) return std::nullopt;
  return gutter;
}

// A run of rows [y0, y1) read as `columns` blocks side by side, this one at `column`, over page
// columns [x0, x1).
struct Block {
  int y0, y1, x0, x1, column, columns;
};

// The narrowest gutter a side may split at: a clean one (no ink in the side's rows) may be narrower.
double narrowest_split(const InkPage& p, const Window& w, std::pair<int, int> g) {
  for (int y = w.y0; y < w.y1; ++y)
    if (row_has_ink(p, y, g.first, g.second)) return PageLayoutRule::kGutterMin * p.width;
  return PageLayoutRule::kCleanGutterMin * p.width;
}

// layout.py's _blocks: the window (the page at depth 0, whose blocks span `extent`; else one side
// of a gutter, extent its columns) cut into blocks in reading order.
std::vector<Block> blocks(const InkPage& p, const Window& w, std::pair<int, int> extent, int depth) {
  std::optional<std::pair<int, int>> g;
  if (depth == 0) {
    g = find_gutter(p, w, false);
  } else if (depth < PageLayoutRule::kMaxSplitDepth &&
             count_bands_in(p, w.x0, w.y0, w.x1, w.y1) >= size_t(PageLayoutRule::kSplitMinBands)) {
    g = find_gutter(p, w, true);
    if (g && (std::min(g->first - w.x0, w.x1 - g->second) < PageLayoutRule::kSplitMinShare * w.width() ||
              g->second - g->first < narrowest_split(p, w, *g)))
      g.reset();
  }
  if (!g) return {Block{w.y0, w.y1, extent.first, extent.second, 0, 1}};
  const std::vector<uint8_t> spanning = spanning_rows(p, w, *g);
  std::vector<Block> out;
  for (int y = w.y0; y < w.y1;) {
    int e = y;
    while (e < w.y1 && spanning[e] == spanning[y]) ++e;
    if (spanning[y]) {
      out.push_back({y, e, extent.first, extent.second, 0, 1});
    } else {
      const std::vector<Block> left = blocks(p, {extent.first, g->first, y, e}, {extent.first, g->first}, depth + 1);
      const std::vector<Block> right = blocks(p, {g->second, extent.second, y, e}, {g->second, extent.second}, depth + 1);
      int n_left = 0, n_right = 0;
      for (const Block& b : left) n_left = std::max(n_left, b.columns);
      for (const Block& b : right) n_right = std::max(n_right, b.columns);
      for (Block b : left) b.columns = n_left + n_right, out.push_back(b);
      for (Block b : right) b.column += n_left, b.columns = n_left + n_right, out.push_back(b);
    }
    y = e;
  }
  return out;
}

}  // namespace

PageLayout find_layout(const uint8_t* gray, int width, int height) {
  PageLayout out;
  out.width = width, out.height = height;
  InkPage p = ink_page(gray, width, height);
  const ErasedLeaders leaders = erase_dot_leaders(p);
  // Columns are looked for with each leader a bar of ink (leader_bar): an entry (title, leader, page
  // number) stays one run across its column, as its line is read without the dots. A page without
  // leaders is looked at as it is (no copy).
  InkPage with_bars;
  if (!leaders.bars.empty()) {
    with_bars = InkPage{width, height, p.binary, {}};
    for (const InkBox& bar : leaders.bars)
      for (int y = bar.y0; y < bar.y1; ++y) std::fill_n(with_bars.binary.begin() + size_t(y) * width + bar.x0, bar.x1 - bar.x0, uint8_t(1));
  }
  const InkPage& columns = leaders.bars.empty() ? p : with_bars;
  int left = width, right = -1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = columns.binary.data() + size_t(y) * width;
    const auto* first = static_cast<const uint8_t*>(std::memchr(row, 1, size_t(width)));
    if (!first) continue;
    left = std::min(left, int(first - row));
    int last = width - 1;
    while (!row[last]) --last;
    right = std::max(right, last);
  }
  if (right < 0) return out;
  ++right;
  for (const Block& b : blocks(columns, Window{0, width, 0, height}, {left, right}, 0))
    for (FoundLine& f : find_lines_in(p, b.x0, b.y0, b.x1, b.y1)) {
      LayoutLine l;
      static_cast<FoundLine&>(l) = std::move(f);
      l.column = b.column, l.columns = b.columns;
      l.region_x0 = b.x0, l.region_x1 = b.x1;
      l.led = std::any_of(leaders.boxes.begin(), leaders.boxes.end(), [&](const InkBox& d) {
        return 2 * l.y0 <= d.y0 + d.y1 && d.y0 + d.y1 < 2 * l.y1 && d.x0 < l.region_x1 && d.x1 > l.region_x0;
      });
      out.lines.push_back(std::move(l));
    }
  return out;
}

}  // namespace folio
