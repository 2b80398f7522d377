// The figures of a page (plots, diagrams, screenshots, photographs) for folio-mini-ocr 2/3: regions
// whose marks are not text. Found before the layout, so that a figure's labels (ticks, axis titles,
// a diagram's words) are not read as text lines and its ink does not disturb the column search; the
// pipeline writes each as an image block and `folio ocr` crops it into a file.
//
//   1. Marks: pixels darker than the paper (the page's kPaperPercentile gray level) by kPaperDelta;
//      their 8-connected components (ink_components.h). The text height H is the median height of
//      glyph-sized components (0.3% to 3% of the page's height, at most twice as wide as tall).
//   2. Seeds: components at least kSeedSize x H on both sides. A pixel is a straight stroke when it
//      lies on a run of marks at least kStroke x H long one way and at most H/3 thick the other.
//      No seed: a shaded box around text (filling kBoxFill of its box, kUniformShare of its pixels
//      within kUniformSpread gray levels of a light tone, the rest but a few (kToneAndText) text
//      darker by kTextBelowTone; one at most kTitleBar x H tall may be a window's title bar); ruled
//      text (kRuledRows rules or more, runs kRuledRun x H long and kRuledWidth of the component
//      wide, at a line's pitch (median at most kRuledPitch x H) kept evenly (kRuledEven of the
//      distances within a quarter of the median): a table's rows, link borders stacked around a
//      contents page's entries); a frame around kDrawingLines lines of text or more with little
//      else inside. Strong: a dark fill (a terminal, a dark window); kCurvedShare of the pixels off
//      straight strokes, some of them one piece spanning kCurveSpan x H (curves, bars, blobs, a
//      photograph; not glyphs touching a frame); a frame holding kScatterMarks marks or more of a
//      glyph's size, most of them not on rows that read as text (kLineMarks or more marks in a band
//      at most 2 H tall): a scatter plot; lines that no rule spans (under kSpanningShare of the
//      straight pixels on runs 0.9 of the component wide; at least kDrawingArea H^2, fewer than
//      kDrawingLines lines of text inside): a drawing of boxes and arrows. Otherwise a frame around
//      two or more lines of text is no seed, and other straight strokes (a frame, a diagram's box)
//      are a weak seed. A title bar with a frame of text under it (within kMenuBar x H: room for a
//      menu), within its width, is a
//      window: a strong seed of the two.
//   3. Seeds within kJoinGap x H of each other are one region, and so are seeds within kConnectGap
//      x H with a component that is no glyph (kConnector x H long or more: an arrow) reaching
//      within H of both; a region is a figure when it has a strong seed or at least two weak ones
//      (a diagram's boxes).
//   4. A figure takes in the components within kLabelMargin x H of it, a few times over (tick
//      labels, then the axis title beyond them), except those on a line of text that goes on beyond
//      the margin (a caption or a paragraph beside the figure). Figures smaller than kMinSide x H on
//      either side are dropped, and so is a line of large type (a title; before or after the labels):
//      at most kLargeType x H tall, three or more marks of at least 0.4 of its height side by side, inked like letters
//      (kLetterFill of their box or more) rather than outlined.
//
// Promises: boxes in page pixels (ends exclusive), disjoint, ordered by (y0, x0); a page of text,
// rules and ruled tables gives none. Work linear in the page's pixels, plus a pass over the page's
// components per seed and per pair of regions joined (few on any page). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace folio {

struct FigureRule {
  static constexpr double kPaperPercentile = 95;
  static constexpr int kPaperDelta = 48;
  static constexpr double kSeedSize = 4.0;
  static constexpr double kStroke = 2.0;
  static constexpr double kUniformShare = 0.6;
  static constexpr int kUniformSpread = 12;
  static constexpr int kLightTone = 150;
  static constexpr int kTextBelowTone = 60;
  static constexpr double kBoxFill = 0.8;
  static constexpr double kToneAndText = 0.85;
  static constexpr int kScatterMarks = 12;
  static constexpr int kLineMarks = 4;
  static constexpr double kCurvedShare = 0.25;
  static constexpr double kCurveSpan = 2.0;
  static constexpr double kJoinGap = 2.0;
  static constexpr double kConnectGap = 8.0;
  static constexpr double kConnector = 2.0;
  static constexpr double kTitleBar = 3.0;
  static constexpr double kMenuBar = 4.0;
  static constexpr double kSpanningShare = 0.15;
  static constexpr double kDrawingArea = 64.0;
  static constexpr int kDrawingLines = 4;
  static constexpr double kRuledRun = 4.0;
  static constexpr int kRuledRows = 5;
  static constexpr double kRuledPitch = 2.5;
  static constexpr double kRuledEven = 0.8;
  static constexpr double kRuledWidth = 0.4;
  static constexpr double kLabelMargin = 2.5;
  static constexpr int kLabelRounds = 4;
  static constexpr double kMinSide = 6.0;
  static constexpr double kLargeType = 10.0;
  static constexpr double kLetterFill = 0.15;
};

struct FigureBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // page pixels, ends exclusive
};

// gray: [height, width] row-major bytes, 255 = paper.
std::vector<FigureBox> find_figures(const uint8_t* gray, int width, int height);

}  // namespace folio
