// PageLayout: the text lines of a page in reading order, for folio-mini-ocr 2. The C++ twin of
// tools/train/mini2/layout.py (keep the two in step; tests/vision/page_layout_golden_test compares
// them on a two-column page with a ruled table).
//
//   1. The background removed (page_background.h: text on shaded boxes stands on white paper), then
//      Otsu binarisation; ink strength by the page's own paper and ink levels (the 90th percentile
//      of the page, the 5th of its Otsu ink). Rules are removed: pixels of horizontal ink runs of at
//      least kRuleH x the page width or vertical runs of at least kRuleV x its height stop being ink
//      (a ruled table falls apart into rows and cells). Dot leaders are erased (dot_leaders.h: a
//      contents entry's title and page number become two segments, and its line is `led`);
//      columns are looked for with each leader a bar of ink (leader_bar: an entry stays one run
//      across its column, so a two-column index is two columns, not titles and page numbers).
//   2. Columns: a clean gutter first: the widest run of pixel columns in the middle half of the
//      ink's extent with no ink in any row (but bands lying within that middle half: a centred page
//      number), at least kCleanGutterMin x the page width (a reference card's close columns), when
//      kFlushLeft bands right of it start at its edge, and half of them when it is narrower than
//      kGutterMin (a column's lines or headings are set flush left; a title's word space in a wide
//      gutter is not), and it passes the tests below (with kBothSidesClean for kBothSides: a
//      document's last page may have a short second column). Else the widest run of pixel columns in the middle half of the ink's extent whose ink
//      count is at most kGutterInk x the rows with ink, at least kGutterMin x the page width, is a
//      gutter; it then becomes the run of columns around its middle with no ink outside spanning
//      rows. A band of the whole page is spanning when at least kSpanRows of its rows have ink in the
//      gutter's middle third (a title, a centred page number; not a line overflowing its column).
//      Runs of spanning rows are full-width zones; the rows between them are two-column zones, read
//      left column then right. A gutter counts only with ink on both sides of it in at least
//      kBothSides of the rows with ink (outside spanning rows) and in at least twice as many rows as
//      are spanning; else the page is one column. It is one column too when the two sides pair up
//      row by row like a table without rules: kTableAligned of the left side's bands have a band
//      on the right centred within a quarter of the median band height, and one side's bands reach
//      less than kColumnFill of its width at the median (columns of text fill theirs); or kTableAligned
//      of the right side's bands are at most kNumberSide times as wide as tall, each within a
//      left-side band's rows (a contents page's numbers).
//      Each side of a two-column zone is read the same way once more (kMaxSplitDepth) when it holds
//      a gutter of its own over at least kSplitMinBands lines, as wide as a page's gutter (or a clean
//      one), each part at least kSplitMinShare of the side: a reference card's three or four columns
//      read left to right. There a gutter parting the side into equal halves (kEqualSides) is
//      exempt from the table rule: a card's columns share their leading, so their lines pair up.
//      `columns` counts the blocks side by side, `column` is the place.
//   3. Lines of each zone and column by line_finder.h.
//
// Promises: the same lines, boxes and crops as the Python reference up to float rounding in the
// resize. Work and memory linear in the page's pixels. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/line_finder.h"

namespace folio {

struct PageLayoutRule {
  static constexpr double kRuleH = 0.04;
  static constexpr double kRuleV = 0.05;
  static constexpr double kGutterInk = 0.08;
  static constexpr double kGutterMin = 0.012;
  static constexpr double kCleanGutterMin = 0.005;
  static constexpr int kFlushLeft = 3;
  static constexpr double kEqualSides = 0.1;
  static constexpr double kSpanRows = 0.3;
  static constexpr double kBothSides = 0.2;
  static constexpr double kBothSidesClean = 0.1;
  static constexpr double kTableAligned = 0.8;
  static constexpr double kColumnFill = 0.9;
  static constexpr double kNumberSide = 4.0;
  static constexpr int kMaxSplitDepth = 2;
  static constexpr int kSplitMinBands = 6;
  static constexpr double kSplitMinShare = 0.3;
};

struct LayoutLine : FoundLine {
  int column = 0;                // 0 (left, only, or spanning), 1 (right)
  int columns = 1;               // columns of its zone
  int region_x0 = 0, region_x1 = 0;  // its column's extent (the ink's whole extent when one column)
  bool led = false;  // a dot leader was erased within its rows and its column (a contents or index entry)
};

struct PageLayout {
  int width = 0, height = 0;
  std::vector<LayoutLine> lines;  // reading order
};

// gray: [height, width] row-major bytes, 255 = paper. A blank page has no lines.
PageLayout find_layout(const uint8_t* gray, int width, int height);

}  // namespace folio
