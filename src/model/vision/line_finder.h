// Text-line finding for folio-mini-ocr 2: the C++ twin of tools/train/mini2/line_finder.py (keep the
// two in step; tests/vision/line_finder_golden_test compares them on a rendered page).
//
//   A page (gray bytes, 255 = paper) is binarised at Otsu's threshold. Runs of rows holding ink form
//   bands; a band thinner than a third of the median band whose gap to the next is also below that
//   (the dots over i and j, accents) joins the next band. Bands under 3 rows are dropped. Each band
//   is cut into segments at column gaps wider than kSegmentGap x its x-height (table cells, a man
//   page's option and its description, columns). Every segment's ink (by the page's own paper and
//   ink levels: the 90th percentile of the page and the 5th of its Otsu ink) goes through the crop
//   rule (line_crop.h) on its own, with 2 x-heights of blank margin.
//
// Promises: segments top to bottom (by band), left to right within a band; the same boxes and crops
// as the Python reference, up to float rounding in the resize. Work and memory linear in the page's
// pixels. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "model/vision/line_crop.h"

namespace folio {

struct FoundLine {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the segment's box on the page (ends exclusive)
  int band_x_height = 0;               // its band's x-height in page pixels (Otsu ink)
  LineCrop crop;                       // the recognizer's input
};

struct LineFinderRule {
  static constexpr double kSegmentGap = 2.2;
};

// gray: [height, width] row-major bytes. Empty result for a blank page.
std::vector<FoundLine> find_text_lines(const uint8_t* gray, int width, int height);

// Otsu's threshold of a gray image (the level maximising between-class variance; ink is < level).
int otsu_threshold(const uint8_t* gray, size_t count);

}  // namespace folio
