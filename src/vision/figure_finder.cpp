#include "vision/figure_finder.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "vision/ink_components.h"

namespace folio {

namespace {

int paper_level(const uint8_t* gray, size_t n) {
  std::array<uint64_t, 256> hist{};
  for (size_t i = 0; i < n; ++i) ++hist[gray[i]];
  const auto want = static_cast<uint64_t>(static_cast<double>(n) * FigureRule::kPaperPercentile / 100.0);
  uint64_t seen = 0;
  for (int v = 0; v < 256; ++v)
    if ((seen += hist[size_t(v)]) >= want) return v;
  return 255;
}

// The median height of glyph-sized components.
double text_height(const std::vector<InkBox>& boxes, int page_height) {
  std::vector<int> heights;
  for (const InkBox& b : boxes) {
    const int h = b.y1 - b.y0, w = b.x1 - b.x0;
    if (h >= 0.003 * page_height && h <= 0.03 * page_height && w <= 2 * h) heights.push_back(h);
  }
  if (heights.empty()) return std::max(8.0, 0.012 * page_height);
  std::nth_element(heights.begin(), heights.begin() + static_cast<std::ptrdiff_t>(heights.size() / 2), heights.end());
  return heights[heights.size() / 2];
}

// 1 where a mark lies on a straight stroke: a run at least `length` long one way, at most `thick`
// the other.
std::vector<uint8_t> straight_strokes(const std::vector<uint8_t>& marks, int width, int height, int length, int thick) {
  const size_t n = size_t(width) * height;
  std::vector<uint16_t> hrun(n, 0), vrun(n, 0);
  for (int y = 0; y < height; ++y) {
    const size_t row = size_t(y) * width;
    for (int x = 0; x < width;) {
      if (!marks[row + x]) { ++x; continue; }
      int e = x;
      while (e < width && marks[row + e]) ++e;
      std::fill(hrun.begin() + static_cast<std::ptrdiff_t>(row + x), hrun.begin() + static_cast<std::ptrdiff_t>(row + e),
                uint16_t(std::min(e - x, 65535)));
      x = e;
    }
  }
  // Down: run length so far; then up: each pixel takes its run's length from the run's last row.
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const size_t i = size_t(y) * width + x;
      vrun[i] = marks[i] ? uint16_t(std::min(65535, (y > 0 ? vrun[i - size_t(width)] : 0) + 1)) : uint16_t(0);
    }
  for (int y = height - 2; y >= 0; --y)
    for (int x = 0; x < width; ++x) {
      const size_t i = size_t(y) * width + x;
      if (marks[i] && marks[i + size_t(width)]) vrun[i] = vrun[i + size_t(width)];
    }
  std::vector<uint8_t> out(n, 0);
  for (size_t i = 0; i < n; ++i)
    out[i] = (hrun[i] >= length && vrun[i] <= thick) || (vrun[i] >= length && hrun[i] <= thick);
  return out;
}

struct Seed {
  InkBox box;
  bool strong = false;
};

// What a component's box holds: marks of a glyph's size or less, how many of them stand on rows that
// read as text (a band of rows at most 2 H tall with kLineMarks or more marks), and those rows.
struct Inside {
  size_t marks = 0, on_lines = 0, lines = 0;
};

Inside inside_of(const std::vector<InkBox>& boxes, const InkBox& frame, double h) {
  std::vector<InkBox> inside;
  for (const InkBox& c : boxes) {
    const int w = c.x1 - c.x0, ht = c.y1 - c.y0;
    if (c.x0 > frame.x0 && c.x1 < frame.x1 && c.y0 > frame.y0 && c.y1 < frame.y1 && std::max(w, ht) >= 0.25 * h && ht <= 1.5 * h && w <= 3 * h)
      inside.push_back(c);
  }
  std::sort(inside.begin(), inside.end(), [](const InkBox& a, const InkBox& b) { return a.y0 < b.y0; });
  Inside out;
  out.marks = inside.size();
  for (size_t i = 0; i < inside.size();) {
    int y1 = inside[i].y1;
    size_t j = i + 1;
    while (j < inside.size() && inside[j].y0 < y1) y1 = std::max(y1, inside[j].y1), ++j;
    if (y1 - inside[i].y0 <= 2 * h && j - i >= size_t(FigureRule::kLineMarks)) out.on_lines += j - i, ++out.lines;
    i = j;
  }
  return out;
}

// The boxes of the pieces of marks off straight strokes that span kCurveSpan x H or more (a curve,
// a bar, a blob; not a glyph touching a frame).
std::vector<InkBox> long_pieces(const std::vector<uint8_t>& marks, const std::vector<uint8_t>& straight, int width, int height, double h) {
  std::vector<uint8_t> rest(marks.size());
  for (size_t i = 0; i < marks.size(); ++i) rest[i] = marks[i] && !straight[i];
  std::vector<InkBox> out;
  for (const InkBox& b : ink_components(rest, width, height))
    if (std::max(b.x1 - b.x0, b.y1 - b.y0) >= FigureRule::kCurveSpan * h) out.push_back(b);
  return out;
}

bool holds_any(const InkBox& outer, const std::vector<InkBox>& pieces) {
  return std::any_of(pieces.begin(), pieces.end(), [&](const InkBox& p) {
    return p.x0 >= outer.x0 && p.x1 <= outer.x1 && p.y0 >= outer.y0 && p.y1 <= outer.y1;
  });
}

// Rows (y of runs, ascending) grouped into rules (rows within H/2: a thick or doubled rule is one);
// true when there are kRuledRows of them or more at a line of text's pitch (the median distance
// between neighbours at most kRuledPitch x H) kept evenly (kRuledEven of the distances within a
// quarter of the median): a table's rows, link borders stacked around a contents page's entries;
// a diagram's boxes stand at uneven distances.
bool ruled_like_text(const std::vector<int>& ys, double h) {
  std::vector<int> rules;
  for (int y : ys)
    if (rules.empty() || y > rules.back() + h / 2) rules.push_back(y);
    else rules.back() = y;
  if (rules.size() < size_t(FigureRule::kRuledRows)) return false;
  std::vector<int> pitch;
  for (size_t i = 1; i < rules.size(); ++i) pitch.push_back(rules[i] - rules[i - 1]);
  std::vector<int> sorted = pitch;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (median > FigureRule::kRuledPitch * h) return false;
  const auto even = std::count_if(pitch.begin(), pitch.end(), [&](int p) { return std::abs(p - median) <= 0.25 * median; });
  return double(even) >= FigureRule::kRuledEven * double(pitch.size());
}

// A seed's size (kSeedSize x H on both sides), or a title bar's (3 seeds wide, 1.5 H tall).
bool seed_sized(const InkBox& b, double h) {
  const double side = FigureRule::kSeedSize * h;
  return (b.x1 - b.x0 >= side && b.y1 - b.y0 >= side) || (b.x1 - b.x0 >= 3 * side && b.y1 - b.y0 >= 1.5 * h);
}

// What a seed-sized component's runs say about it.
struct CandidateStats {
  InkBox box;
  std::array<uint32_t, 256> tones{};  // its pixels' gray levels
  uint64_t straight = 0;              // pixels on straight strokes
  uint64_t spanning = 0;              // pixels on runs 0.9 of its width or wider
  std::vector<int> rule_rows;         // rows of its runs kRuledRun x H long and kRuledWidth of it wide
};

std::vector<CandidateStats> candidate_stats(const InkComponents& comps, const uint8_t* gray, const std::vector<uint8_t>& straight,
                                            int width, double h) {
  std::vector<int> index_of(comps.boxes.size(), -1);
  std::vector<CandidateStats> out;
  for (size_t c = 0; c < comps.boxes.size(); ++c)
    if (seed_sized(comps.boxes[c], h)) {
      index_of[c] = static_cast<int>(out.size());
      out.emplace_back().box = comps.boxes[c];
    }
  for (size_t r = 0; r < comps.runs.size(); ++r) {
    if (index_of[comps.component[r]] < 0) continue;
    CandidateStats& st = out[size_t(index_of[comps.component[r]])];
    const InkRun& run = comps.runs[r];
    const int len = run.x1 - run.x0, w = st.box.x1 - st.box.x0;
    if (10 * len >= 9 * w) st.spanning += size_t(len);
    if (len >= FigureRule::kRuledRun * h && len >= FigureRule::kRuledWidth * w) st.rule_rows.push_back(run.y);
    const size_t row = size_t(run.y) * width;
    for (int x = run.x0; x < run.x1; ++x) {
      ++st.tones[gray[row + x]];
      st.straight += straight[row + x];
    }
  }
  return out;
}

enum class Verdict { None, TitleBar, TextFrame, Weak, Strong };

// One candidate by the rules of step 2.
Verdict judge(const CandidateStats& st, const std::vector<InkBox>& boxes, const std::vector<InkBox>& pieces, double h) {
  const InkBox& b = st.box;
  const auto& t = st.tones;
  const int mode = static_cast<int>(std::max_element(t.begin(), t.end()) - t.begin());
  uint64_t near = 0, dark = 0;
  for (int v = std::max(0, mode - FigureRule::kUniformSpread); v <= std::min(255, mode + FigureRule::kUniformSpread); ++v) near += t[size_t(v)];
  for (int v = 0; v < mode - FigureRule::kTextBelowTone; ++v) dark += t[size_t(v)];
  const double count = std::max(1, b.count);
  const bool uniform = near >= FigureRule::kUniformShare * count;
  const double fill = count / (double(b.x1 - b.x0) * double(b.y1 - b.y0));
  // A shaded box around text: one light tone filling its box, and text far darker than it (a
  // photograph's light areas have the tones between).
  if (uniform && mode > FigureRule::kLightTone && fill >= FigureRule::kBoxFill && near + dark >= FigureRule::kToneAndText * count)
    return b.y1 - b.y0 <= FigureRule::kTitleBar * h ? Verdict::TitleBar : Verdict::None;
  if (b.y1 - b.y0 < FigureRule::kSeedSize * h) return Verdict::None;  // a bar of marks
  const Inside in = inside_of(boxes, b, h);
  const bool dark_fill = uniform && mode <= FigureRule::kLightTone && fill >= FigureRule::kBoxFill;
  // Ruled text (a table's rows, link borders stacked around a contents page's entries); a frame
  // around text (a code block's on a scan turned a little, whose rules are no longer straight).
  if (!dark_fill && (ruled_like_text(st.rule_rows, h) ||
                     (in.lines >= size_t(FigureRule::kDrawingLines) && 5 * in.on_lines >= 4 * in.marks)))
    return Verdict::TextFrame;
  const bool curves = 1.0 - double(st.straight) / count >= FigureRule::kCurvedShare && holds_any(b, pieces);
  const bool scatter = in.marks >= size_t(FigureRule::kScatterMarks) && 2 * in.on_lines < in.marks;
  if (dark_fill || curves || scatter) return Verdict::Strong;
  // Lines drawn apart from any frame around them (boxes and arrows): a diagram. A frame, a grid
  // or a table's rules run across the component's whole width.
  if (in.lines < size_t(FigureRule::kDrawingLines) && double(st.spanning) < FigureRule::kSpanningShare * double(std::max<uint64_t>(1, st.straight)) &&
      (b.x1 - b.x0) * double(b.y1 - b.y0) >= FigureRule::kDrawingArea * h * h)
    return Verdict::Strong;
  return in.lines >= 2 ? Verdict::TextFrame : Verdict::Weak;  // a frame around lines of text: a table, a text box
}

// A window: a light title bar with a frame of text under it (room for a menu between), no wider
// than the bar.
std::vector<Seed> windows(const std::vector<InkBox>& bars, const std::vector<InkBox>& frames, double h) {
  std::vector<Seed> out;
  for (const InkBox& bar : bars)
    for (const InkBox& f : frames)
      if (f.y0 >= bar.y1 - h && f.y0 <= bar.y1 + FigureRule::kMenuBar * h && f.x0 >= bar.x0 - h && f.x1 <= bar.x1 + h &&
          f.x1 - f.x0 >= 0.6 * (bar.x1 - bar.x0)) {
        InkBox w = bar;
        w.x0 = std::min(w.x0, f.x0), w.x1 = std::max(w.x1, f.x1), w.y1 = std::max(w.y1, f.y1);
        out.push_back({w, true});
      }
  return out;
}

// Step 2: seed-sized components judged by their tones and strokes, and windows.
std::vector<Seed> find_seeds(const InkComponents& comps, const uint8_t* gray, const std::vector<uint8_t>& straight,
                             const std::vector<InkBox>& pieces, int width, double h) {
  std::vector<Seed> out;
  std::vector<InkBox> bars, frames;
  for (const CandidateStats& st : candidate_stats(comps, gray, straight, width, h)) {
    switch (judge(st, comps.boxes, pieces, h)) {
      case Verdict::TitleBar: bars.push_back(st.box); break;
      case Verdict::TextFrame: frames.push_back(st.box); break;
      case Verdict::Weak: out.push_back({st.box, false}); break;
      case Verdict::Strong: out.push_back({st.box, true}); break;
      case Verdict::None: break;
    }
  }
  for (const Seed& w : windows(bars, frames, h)) out.push_back(w);
  return out;
}

int gap_between(const InkBox& a, const InkBox& b) {
  const int dx = std::max({0, b.x0 - a.x1, a.x0 - b.x1});
  const int dy = std::max({0, b.y0 - a.y1, a.y0 - b.y1});
  return std::max(dx, dy);
}

void unite(InkBox& a, const InkBox& b) {
  a.x0 = std::min(a.x0, b.x0), a.y0 = std::min(a.y0, b.y0);
  a.x1 = std::max(a.x1, b.x1), a.y1 = std::max(a.y1, b.y1);
}

struct Region {
  InkBox box;
  int strong = 0, weak = 0;
};

// Whether a component that is no glyph (kConnector x H long or more: an arrow, a line) reaches
// within H of both boxes.
bool connected(const InkBox& a, const InkBox& b, const std::vector<InkBox>& boxes, double h) {
  for (const InkBox& c : boxes)
    if (std::max(c.x1 - c.x0, c.y1 - c.y0) >= FigureRule::kConnector * h && gap_between(c, a) <= h && gap_between(c, b) <= h) return true;
  return false;
}

// Step 3: seeds joined while any two regions are within `gap`, or within kConnectGap x H with a
// line between them (a diagram's boxes and their arrows).
std::vector<Region> join_seeds(const std::vector<Seed>& seeds, const std::vector<InkBox>& boxes, double h) {
  const int gap = static_cast<int>(FigureRule::kJoinGap * h), far = static_cast<int>(FigureRule::kConnectGap * h);
  std::vector<Region> regions;
  for (const Seed& s : seeds) regions.push_back({s.box, s.strong ? 1 : 0, s.strong ? 0 : 1});
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < regions.size() && !merged; ++i)
      for (size_t j = i + 1; j < regions.size(); ++j)
        if (const int g = gap_between(regions[i].box, regions[j].box);
            g <= gap || (g <= far && connected(regions[i].box, regions[j].box, boxes, h))) {
          unite(regions[i].box, regions[j].box);
          regions[i].strong += regions[j].strong, regions[i].weak += regions[j].weak;
          regions.erase(regions.begin() + static_cast<std::ptrdiff_t>(j));
          merged = true;
          break;
        }
  }
  std::erase_if(regions, [](const Region& r) { return r.strong == 0 && r.weak < 2; });
  return regions;
}

// Step 4's exception: a component on a line of text that goes on beyond `reach` of the region (a
// glyph-sized component on its rows just outside the margin).
bool line_goes_on(const std::vector<InkBox>& boxes, const InkBox& c, const InkBox& reach, double h) {
  const int mid = (c.y0 + c.y1) / 2;
  const int beyond = static_cast<int>(3 * h);
  for (const InkBox& o : boxes) {
    if (o.y0 > mid || o.y1 <= mid || o.y1 - o.y0 > 3 * h) continue;
    if ((o.x0 >= reach.x1 && o.x0 < reach.x1 + beyond) || (o.x1 <= reach.x0 && o.x1 > reach.x0 - beyond)) return true;
  }
  return false;
}

void take_in_labels(Region& r, const std::vector<InkBox>& boxes, double h) {
  const int margin = static_cast<int>(FigureRule::kLabelMargin * h);
  for (int round = 0; round < FigureRule::kLabelRounds; ++round) {
    const InkBox reach{r.box.x0 - margin, r.box.y0 - margin, r.box.x1 + margin, r.box.y1 + margin, 0};
    bool grew = false;
    for (const InkBox& c : boxes) {
      const bool inside = c.x0 >= r.box.x0 && c.x1 <= r.box.x1 && c.y0 >= r.box.y0 && c.y1 <= r.box.y1;
      const bool near = c.x0 < reach.x1 && c.x1 > reach.x0 && c.y0 < reach.y1 && c.y1 > reach.y0;
      if (inside || !near || line_goes_on(boxes, c, reach, h)) continue;
      unite(r.box, c);
      grew = true;
    }
    if (!grew) break;
  }
}

// A line of large type (a title set far larger than the text) rather than a figure: a region at most
// kLargeType x H tall with three or more marks at least 0.4 of its height side by side, inked like
// letters (kLetterFill of their box or more) rather than drawn as outlines.
bool reads_as_large_type(const InkBox& r, const std::vector<InkBox>& boxes, double h) {
  const int height = r.y1 - r.y0;
  if (height > FigureRule::kLargeType * h) return false;
  int letters = 0, others = 0;
  for (const InkBox& c : boxes) {
    if (c.x0 < r.x0 || c.x1 > r.x1 || c.y0 < r.y0 || c.y1 > r.y1 || c.y1 - c.y0 < 0.4 * height) continue;
    const double fill = double(c.count) / (double(c.x1 - c.x0) * double(c.y1 - c.y0));
    ++(fill >= FigureRule::kLetterFill ? letters : others);
  }
  return letters >= 3 && letters > 2 * others;
}

}  // namespace

std::vector<FigureBox> find_figures(const uint8_t* gray, int width, int height) {
  const size_t n = size_t(width) * height;
  if (n == 0) return {};
  const int mark_below = paper_level(gray, n) - FigureRule::kPaperDelta;
  std::vector<uint8_t> marks(n);
  for (size_t i = 0; i < n; ++i) marks[i] = gray[i] < mark_below;
  const InkComponents comps = label_ink_components(marks, width, height);
  const double h = text_height(comps.boxes, height);
  // A page of text has no component of a seed's size: nothing more to look at (most pages).
  if (std::none_of(comps.boxes.begin(), comps.boxes.end(), [&](const InkBox& b) { return seed_sized(b, h); })) return {};
  const std::vector<uint8_t> straight =
      straight_strokes(marks, width, height, static_cast<int>(FigureRule::kStroke * h), std::max(3, static_cast<int>(h / 3)));
  const std::vector<InkBox> pieces = long_pieces(marks, straight, width, height, h);
  std::vector<Region> regions = join_seeds(find_seeds(comps, gray, straight, pieces, width, h), comps.boxes, h);
  std::vector<FigureBox> out;
  for (Region& r : regions) {
    if (reads_as_large_type(r.box, comps.boxes, h)) continue;
    take_in_labels(r, comps.boxes, h);
    if (reads_as_large_type(r.box, comps.boxes, h)) continue;
    if (r.box.x1 - r.box.x0 < FigureRule::kMinSide * h || r.box.y1 - r.box.y0 < FigureRule::kMinSide * h) continue;
    out.push_back({std::max(0, r.box.x0), std::max(0, r.box.y0), std::min(width, r.box.x1), std::min(height, r.box.y1)});
  }
  // Regions that grew into each other are one figure.
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < out.size() && !merged; ++i)
      for (size_t j = i + 1; j < out.size(); ++j)
        if (out[i].x0 < out[j].x1 && out[j].x0 < out[i].x1 && out[i].y0 < out[j].y1 && out[j].y0 < out[i].y1) {
          out[i] = {std::min(out[i].x0, out[j].x0), std::min(out[i].y0, out[j].y0), std::max(out[i].x1, out[j].x1),
                    std::max(out[i].y1, out[j].y1)};
          out.erase(out.begin() + static_cast<std::ptrdiff_t>(j));
          merged = true;
          break;
        }
  }
  std::sort(out.begin(), out.end(), [](const FigureBox& a, const FigureBox& b) { return a.y0 != b.y0 ? a.y0 < b.y0 : a.x0 < b.x0; });
  return out;
}

}  // namespace folio
