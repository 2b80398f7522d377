// What folio-mini-ocr 2's structure decoder reads about each text line: the C++ twin of
// tools/train/mini2/features.py (keep them in step; tests/vision/structure_tokens_golden_test
// compares them on recorded lines).
//
// A line token is kNumeric features (its box against its column, x-height and height against the
// page's, gaps above and below against its x-height and the page's typical gap, segments, column,
// ink against the page's, text length, indent changes, digits and capitals, whether the line before
// in reading order ends with a hyphen) plus the character
// classes of the first kCharHead and last kCharTail characters of its text (0: none or unknown).
// Medians are the upper middle value, as features.py takes them. Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace folio {

// A segment as read: its columns, the recognizer's text, the mean of its crop's ink.
struct ReadSegment {
  int x0 = 0, x1 = 0;
  std::string text;
  double ink = 0;
};

// A line of page_layout.h with its segments read.
struct ReadLine {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int column = 0, columns = 1, region_x0 = 0, region_x1 = 0;
  int x_height = 0, gap_before = -1;
  bool led = false;  // page_layout.h: a dot leader was erased in it
  std::vector<ReadSegment> segments;
  std::string text() const;  // segments joined by " "
};

inline constexpr int kLineNumeric = 22;
inline constexpr int kCharHead = 3, kCharTail = 2, kCharSlots = kCharHead + kCharTail;

struct LineFeatures {
  std::array<float, kLineNumeric> numeric{};
  std::array<int32_t, kCharSlots> chars{};
};

// Code point -> class (k + 1 for the k-th character of the UTF-8 charset, 0 otherwise).
class CharClasses {
 public:
  explicit CharClasses(const std::string& charset);
  int32_t of(char32_t character) const;
  int32_t count() const { return static_cast<int32_t>(index_.size()) + 1; }

 private:
  std::unordered_map<char32_t, int32_t> index_;
};

// The features of one page's lines, in reading order.
std::vector<LineFeatures> page_line_features(const std::vector<ReadLine>& lines, int page_height, const CharClasses& classes);

// How a line looks against its page, for settling heading levels (runtime/heading_levels.h; the twin
// of page_styles in tools/train/mini2/heading_levels.py): x-height and ink against the page's
// medians, set in capitals (at least two letters, 80% of them upper case), its indent from its
// column in the page's median x-heights, centred in its column (set in by more than kCentredIndent
// median x-heights, its centre within kCentredShare of the column's width of the column's centre).
struct LineStyle {
  double size = 1, weight = 1, indent = 0;
  bool caps = false, centred = false;
};
inline constexpr double kCentredIndent = 3.0, kCentredShare = 0.05;

// The styles of one page's lines, in reading order.
std::vector<LineStyle> page_line_styles(const std::vector<ReadLine>& lines);

}  // namespace folio
