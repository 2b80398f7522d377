// Deskewing a page for folio-mini-ocr 2: the C++ twin of tools/train/mini2/deskew.py (keep them in
// step; tests/vision/deskew_golden_test compares them on a tilted page).
//
// The skew is the angle in [-kMaxAngle, kMaxAngle] degrees, in steps of kStep, at which the page's
// ink projects most sharply onto the vertical (lines y = c + x tan a project onto y cos a - x sin a
// as one value each): the sum of squared counts of that projection in 1-pixel bins. Ink is Otsu's
// (<= level), at most kMaxPoints pixels of it (every k-th in row-major order). Angles are tried from
// 0 outwards (0, -step, +step, ...), the first best kept, and the page counts as skewed only when
// it beats the level projection by kMinGain. A skewed page is turned back about its centre with
// bilinear sampling (paper, 255, beyond the edges), rounded to bytes.
//
// Pure functions; thread-safe. Work: ~61 projections of at most 20,000 points, one pass over the
// page when it turns.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace folio {

struct DeskewRule {
  static constexpr double kMaxAngle = 3.0;
  static constexpr double kStep = 0.1;
  static constexpr int64_t kMaxPoints = 20000;
  static constexpr int64_t kMinPoints = 100;
  static constexpr double kMinGain = 1.1;
};

// Degrees (a multiple of kStep); 0 when the page is level or has too little ink to tell. With a
// pool, the angles are scored on its threads (same result).
double skew_angle(const uint8_t* gray, int width, int height, ThreadPool* pool = nullptr);

// The page turned so that lines at `degrees` become level: [height, width] bytes.
std::vector<uint8_t> rotate_page(const uint8_t* gray, int width, int height, double degrees);

}  // namespace folio
