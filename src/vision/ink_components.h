// The 8-connected ink components of a binary page, as runs of ink pixels on rows: what the dot
// leader finder (dot_leaders.h) and the figure finder (figure_finder.h) measure ink with.
//
// Promises: components in order of their first pixel (row by row, left to right), each run once;
// work and memory linear in the page's runs. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace folio {

struct InkBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // ends exclusive
  int count = 0;                       // ink pixels
};

struct InkRun {
  int y = 0, x0 = 0, x1 = 0;  // [x0, x1) on row y
};

struct InkComponents {
  std::vector<InkRun> runs;          // row by row, left to right
  std::vector<uint32_t> component;   // per run: its component's index in boxes
  std::vector<InkBox> boxes;         // per component
};

// binary: [height, width], 1 = ink.
InkComponents label_ink_components(const std::vector<uint8_t>& binary, int width, int height);

// The components' boxes alone (label_ink_components(...).boxes).
std::vector<InkBox> ink_components(const std::vector<uint8_t>& binary, int width, int height);

}  // namespace folio
