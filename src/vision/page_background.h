// The page divided by its background, for folio-mini-ocr's layout: the C++ twin of
// remove_background in tools/train/mini2/line_finder.py (keep the two in step;
// tests/vision/page_background_golden_test compares their bytes on a page with shaded code).
//
// Manuals set code listings, notes and table headers on grey or tinted boxes. Otsu's threshold
// over such a page splits paper from box rather than ink from paper, and the box's shade reaches
// the recognizer as faint ink around every letter. The background is the gray closing of the page
// (a running max, then a running min, over a square window of background_window(width) pixels):
// it fills every dark stroke narrower than the window and keeps the shade of any larger region with
// its edges. Each pixel becomes min(255, (255 * g + bg / 2) / bg) in integers (bg at least 1), so
// text on a box stands on white paper and white paper stays as it was.
//
// Promises: the same bytes as the Python reference. Work linear in the pixels whatever the window
// down the columns (van Herk / Gil-Werman running extremes, a whole row at a time) and log2 of it
// along the rows (doubling windows, vectorised), memory a few page-sized buffers. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace folio {

// The window's side: odd, about 1/85 of the page width (15 pixels at 150 DPI), at least 9.
int background_window(int width);

// gray: [height, width] row-major bytes, 255 = paper. Returns the normalised page, same shape.
std::vector<uint8_t> remove_background(const uint8_t* gray, int width, int height);

}  // namespace folio
