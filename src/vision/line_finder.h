// Text lines in one region of a page, for folio-mini-ocr 2: the C++ twin of the band and segment
// rules of tools/train/mini2/line_finder.py, as layout.py applies them to one zone and column (keep
// them in step; tests/vision/page_layout_golden_test compares the whole layout).
//
//   Runs of rows holding ink (within the region's columns) form bands; a band thinner than a third
//   of the region's median band (the dots over i and j, accents, an underscore row under a line
//   with no descenders) joins its nearer neighbour when that gap is also below a third (ties: the
//   band below). With four bands of 3 rows or more, a band at least kTallBand x their lower-quartile height
//   is cut at its thinnest row (three quarters of a typical band or more from either end: not in a
//   heading's rows of capitals and ascenders) when that row holds
//   under kValley of the band's fullest row's ink, and each part again: lines set so tight that
//   descenders and ascenders share rows. Bands under 3 rows are dropped. Each band is cut into segments at
//   column gaps wider than kSegmentGap x its x-height (table cells, a man page's option and its
//   description). Every segment's ink goes through the crop rule (line_crop.h) on its own, with 2
//   x-heights of blank margin; a segment at most kNarrowSegment x-heights wide, of a line of two or
//   more, with its band's core (a page number's digits show no x-height of their own).
//
// Promises: lines top to bottom, segments left to right; work linear in the region's pixels. Pure
// functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vision/line_crop.h"

namespace folio {

struct LineFinderRule {
  static constexpr double kSegmentGap = 2.2;
  static constexpr double kTallBand = 1.6;
  static constexpr double kValley = 0.25;
  static constexpr double kNarrowSegment = 3.0;  // x-heights
};

// A page binarised (1 = ink) and its ink strength in [0, 1], both [height, width] row-major.
struct InkPage {
  int width = 0, height = 0;
  std::vector<uint8_t> binary;
  std::vector<float> ink;
};

struct LineSegment {
  int x0 = 0, x1 = 0;  // page columns [x0, x1)
  LineCrop crop;
};

struct FoundLine {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // box of its segments on the page (ends exclusive)
  int x_height = 0;                    // its band's x-height (binary ink)
  int gap_before = -1;                 // blank rows to the previous line of the region; -1 for the first
  std::vector<LineSegment> segments;   // at least one
};

// The lines of the region rows [y0, y1) x columns [x0, x1) of `page`.
std::vector<FoundLine> find_lines_in(const InkPage& page, int x0, int y0, int x1, int y1);

// How many bands of rows with ink the region has once thin ones are merged (before bands under 3
// rows are dropped): layout.py's len(merge_thin(bands(...))).
size_t count_bands_in(const InkPage& page, int x0, int y0, int x1, int y1);

// Otsu's threshold of a gray image: the level maximising between-class variance, the last level of
// the dark class (ink is <= level; a two-level image splits between its levels).
int otsu_threshold(const uint8_t* gray, size_t count);
// The same from the image's byte_histogram (`count` pixels), for callers that need it too.
int otsu_threshold(const std::array<uint64_t, 256>& histogram, size_t count);
// How many of `count` bytes hold each value.
std::array<uint64_t, 256> byte_histogram(const uint8_t* bytes, size_t count);

}  // namespace folio
