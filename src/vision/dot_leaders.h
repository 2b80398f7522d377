// Dot leaders: the rows of dots that lead a table of contents' or an index's entry to its page
// number. The C++ twin of tools/train/mini2/dot_leaders.py (keep the two in step;
// tests/vision/dot_leaders_golden_test compares them on contents pages of several toolchains).
//
// A leader is ink but not text: read as characters it is a run of marks no reader wants, and its dots
// stand in columns that all of a table of contents' lines share (LaTeX sets them on one grid), so the
// spaces between them looked like gutters and the page was read as columns of dots. The layout
// erases leaders before it looks for columns; an entry's leader is then the wide gap between its
// title and its page number (two segments), and its line is marked as led.
//
//   1. Ink components (8-connected) of the binary page; a dot is one at most kDotMax of the page
//      width (and 3 pixels) wide and tall, neither side more than 2 pixels longer than the other,
//      at least half of its box inked.
//   2. Dots, visited in order of (x0, y0), chain left to right: a dot continues the chain whose last
//      dot ends nearest before it (gap at most kGapMax x the page width, vertical centres
//      within one pixel, no ink between the two in their rows; the first chain of equals), or starts
//      one.
//   3. A chain is cut where its pitch (x0 to the next dot's x0) leaves [1/2, 3/2] of the pitch its
//      run started with: the run ends at the dot before, the next run starts there (a title's final
//      period leaves the leader whole; a leader that changes its pitch is two). Each run of at least
//      kMinDots dots is a leader.
//
// Promises: the Python reference's leaders, dot for dot. Work linear in the page's ink runs plus,
// per dot, the chains still open within reach. Pure functions; thread-safe.
#pragma once

#include <vector>

#include "vision/ink_components.h"
#include "vision/line_finder.h"

namespace folio {

struct DotLeaderRule {
  static constexpr double kDotMax = 1.0 / 170;  // x the page width
  static constexpr int kMinDots = 5;            // an ellipsis has three
  static constexpr double kGapMax = 0.025;      // x the page width: LaTeX's leaders, groff's (a sixth of an inch)
};

struct DotLeader {
  InkBox box;                 // x0 of its first dot to x1 of its last; its dots' rows
  std::vector<InkBox> dots;   // left to right
};

// The page's dot leaders, ordered by (y0, x0).
std::vector<DotLeader> find_dot_leaders(const std::vector<uint8_t>& binary, int width, int height);

// The rows and columns a leader fills as a bar of ink for the column search: its dots' columns, and
// rows up from its dots' bottom as tall as its pitch or three dots (a bar of the dots' own rows
// weighs too little against a column's lines). count is 0.
InkBox leader_bar(const DotLeader& leader);

struct ErasedLeaders {
  std::vector<InkBox> boxes, bars;  // per leader
};

// Finds the leaders and erases their dots from the page: each dot's box from the binary map, and from
// the ink strengths the box and the pixel around it where the binary map has no ink (the dot's
// anti-aliased rim, which a crop would show as specks). Returns the leaders' boxes and bars.
ErasedLeaders erase_dot_leaders(InkPage& page);

}  // namespace folio
