// HeadingLevels: the levels folio-mini-ocr 2 writes its headings at, settled per document. The C++
// twin of tools/train/mini2/heading_levels.py (keep them in step; tests/runtime/heading_levels_test
// compares them on documents the Python side settled).
//
// The structure decoder proposes H1, H2 or H3 for a heading from the line and the lines around it;
// two headings that look alike can come out at two levels, or a section under the title as a
// subsection. Two rules hold the levels together as a reader expects:
//  1. a heading that looks like an earlier heading of the document (alike: the same size, weight,
//     case and indent against its page, line_features.h's LineStyle) gets that heading's level;
//  2. any other heading is at most one level below the heading before it (no level is skipped).
// The first heading keeps the proposed level. Levels are 1-3. Not thread-safe; one per document.
#pragma once

#include <utility>
#include <vector>

#include "vision/line_features.h"

namespace folio {

// Two looks are alike: x-heights within kSizeTolerance (|ln| of the ratio; x-heights are whole
// pixels, 1 in 8-14), ink within kWeightTolerance (bold sets 1.3-1.5 times the ink), the same case,
// and both centred or indents within kIndentTolerance median x-heights.
inline constexpr double kSizeTolerance = 0.12, kWeightTolerance = 0.2, kIndentTolerance = 1.5;
bool alike(const LineStyle& a, const LineStyle& b);

class HeadingLevels {
 public:
  // The level a heading of this look is written at, the decoder having proposed `proposed` (1-3).
  int level(const LineStyle& style, int proposed) const;
  // A heading of this look was written at `level`.
  void note(const LineStyle& style, int level);

 private:
  const std::pair<LineStyle, int>* known(const LineStyle& style) const;

  std::vector<std::pair<LineStyle, int>> known_;  // the first heading of each look, its level
  int last_ = 0;                                  // the heading before's level; 0 before the first
};

}  // namespace folio
