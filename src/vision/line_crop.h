// The crop rule of folio-mini-ocr 2: how one text line becomes the recognizer's input. Mirrors
// crop_line in tools/train/mini2/lines.py, which the recognizer was trained on; keep them in step.
//
//   Within the line's band of rows, a pixel is ink when its value exceeds 0.5. The profile p[y]
//   counts ink pixels per row; the core is the rows from the first to the last with
//   p >= kCoreFraction * max(p) (the x-height body of ordinary text), xh its height (at least 2).
//   When that core is under kCoreMinShare of the band, one dense row outweighed the body (a dot
//   leader, a run of underscores under short words) and the core is taken again against the
//   largest p outside that thin core instead of max(p).
//   The crop spans rows [core top - kAscend * xh, core bottom + kDescend * xh) and columns
//   [first ink - kPad * xh, last ink + kPad * xh); pixels outside the band or the image are 0. It is
//   scaled to kHeight rows, the width in proportion rounded up to a multiple of 4 (Pillow's bilinear
//   resize on floats, resize_float.h), and clipped to [0, 1].
//
// Keeping the x-height at a fixed fraction of the crop is what lets the recognizer tell case pairs
// (S/s, O/o, C/c) apart. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace folio {

struct LineCropRule {
  static constexpr int64_t kHeight = 32;
  static constexpr double kCoreFraction = 0.5;
  static constexpr double kAscend = 0.75;
  static constexpr double kDescend = 0.6;
  static constexpr double kPad = 0.4;
  static constexpr double kCoreMinShare = 0.25;
};

// The core of a band's ink profile (see above): its first and last row, or nullopt when every
// count is 0. Also the x-height of line_finder's bands.
std::optional<std::pair<int, int>> core_rows(const std::vector<int>& profile);

struct LineCrop {
  int64_t width = 0;        // a multiple of 4
  std::vector<float> ink;   // [LineCropRule::kHeight, width] row-major, in [0, 1]
  double x_height = 0;      // xh in the source image's pixels
};

// ink: [height, width] row-major, 1 = ink. band: the rows [band_y0, band_y1) holding the line.
// core: its first and last rows relative to the band, instead of the ink's own (a segment too narrow
// to show its line's x-height, such as a page number, takes its line's). nullopt when no pixel of
// the band exceeds 0.5.
std::optional<LineCrop> crop_line(const std::vector<float>& ink, int width, int height, int band_y0, int band_y1,
                                  std::optional<std::pair<int, int>> core = std::nullopt);

}  // namespace folio
