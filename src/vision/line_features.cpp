#include "vision/line_features.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "text/utf8.h"

namespace folio {

namespace {

double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

template <typename T>
double upper_median(std::vector<T> v, double fallback) {
  if (v.empty()) return fallback;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[v.size() / 2]);
}

// Python's str.isalpha / isupper / isdigit on the characters the recognizer can write (ASCII,
// Latin-1 letters, œ; its punctuation and symbols are none of them).
bool is_alpha(char32_t cp) {
  if (cp < 0x80) return std::isalpha(static_cast<int>(cp)) != 0;
  return (cp >= 0xc0 && cp <= 0xff && cp != 0xd7 && cp != 0xf7) || cp == 0x152 || cp == 0x153;
}
bool is_upper(char32_t cp) {
  if (cp < 0x80) return std::isupper(static_cast<int>(cp)) != 0;
  return (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) || cp == 0x152;
}
bool is_digit(char32_t cp) { return cp >= '0' && cp <= '9'; }

bool ends_with_hyphen(const std::string& text) {
  size_t n = text.size();
  while (n > 0 && text[n - 1] == ' ') --n;
  return n > 0 && text[n - 1] == '-';
}

double line_ink(const ReadLine& l) {
  double s = 0, w = 0;
  for (const ReadSegment& g : l.segments) s += g.ink * (g.x1 - g.x0), w += g.x1 - g.x0;
  return s / std::max(1.0, w);
}

}  // namespace

std::string ReadLine::text() const {
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) out += (i ? " " : "") + segments[i].text;
  return out;
}

CharClasses::CharClasses(const std::string& charset) {
  int32_t k = 1;
  for (char32_t c : decode_utf8(charset).cps) index_.emplace(c, k++);
}

int32_t CharClasses::of(char32_t character) const {
  const auto it = index_.find(character);
  return it == index_.end() ? 0 : it->second;
}

std::vector<LineFeatures> page_line_features(const std::vector<ReadLine>& lines, int page_height, const CharClasses& classes) {
  std::vector<int> xhs, gaps;
  std::vector<double> inks;
  for (const ReadLine& l : lines) {
    xhs.push_back(l.x_height);
    if (l.gap_before >= 0) gaps.push_back(l.gap_before);
    inks.push_back(line_ink(l));
  }
  const double med_xh = upper_median(xhs, 10);
  const double med_gap = std::max(1.0, upper_median(gaps, med_xh));
  const double med_ink = std::max(1e-3, upper_median(inks, 0.1));
  std::vector<LineFeatures> out(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const ReadLine& l = lines[i];
    const double rw = std::max(1, l.region_x1 - l.region_x0), xh = std::max(2, l.x_height);
    const bool first = l.gap_before < 0;
    const ReadLine* next = i + 1 < lines.size() ? &lines[i + 1] : nullptr;
    const bool same_next = next && next->gap_before >= 0 && next->column == l.column;
    const double gap_after = same_next ? next->gap_before : 0;
    const ReadLine* prev = i > 0 && !first ? &lines[i - 1] : nullptr;
    const std::string text = l.text();
    const std::vector<char32_t> chars = decode_utf8(text).cps;
    double letters = 0, upper = 0, digits = 0;
    for (char32_t cp : chars) {
      letters += is_alpha(cp), upper += is_alpha(cp) && is_upper(cp), digits += is_digit(cp);
    }
    double seg_gaps = 0;
    for (size_t k = 1; k < l.segments.size(); ++k) seg_gaps += l.segments[k].x0 - l.segments[k - 1].x1;
    const double n = static_cast<double>(chars.size());
    const double f[kLineNumeric] = {
        (l.x0 - l.region_x0) / rw,
        (l.region_x1 - l.x1) / rw,
        clip(std::log(xh / med_xh), -2, 2),
        clip((l.y1 - l.y0) / xh / 4, 0, 3),
        first ? 0.0 : clip(l.gap_before / xh / 4, 0, 2),
        first ? 1.0 : 0.0,
        first ? 0.0 : clip(l.gap_before / med_gap - 1, -1, 4),
        clip(gap_after / xh / 4, 0, 2),
        same_next ? 0.0 : 1.0,
        std::min<double>(static_cast<double>(l.segments.size()) - 1, 3) / 3,
        // Three or four columns read like two: later columns as the right one (features.py).
        static_cast<double>(std::min(l.column, 1)),
        l.columns >= 2 ? 1.0 : 0.0,
        l.y0 / static_cast<double>(std::max(1, page_height)),
        clip(inks[i] / med_ink - 1, -1, 2),
        clip(n / (rw / xh), 0, 2),
        prev ? clip((l.x0 - prev->x0) / xh / 8, -2, 2) : 0.0,
        prev ? clip((l.x1 - prev->x1) / xh / 8, -2, 2) : 0.0,
        seg_gaps / rw,
        digits / std::max(1.0, n),
        upper / std::max(1.0, letters),
        ((l.x0 + l.x1) / 2.0 - (l.region_x0 + l.region_x1) / 2.0) / rw,
        i > 0 && ends_with_hyphen(lines[i - 1].text()) ? 1.0 : 0.0,
    };
    for (int k = 0; k < kLineNumeric; ++k) out[i].numeric[k] = static_cast<float>(f[k]);
    // The first and last characters of the text without its outer spaces.
    size_t a = 0, b = chars.size();
    while (a < b && chars[a] == U' ') ++a;
    while (b > a && chars[b - 1] == U' ') --b;
    for (int k = 0; k < kCharHead && a + k < b; ++k) out[i].chars[k] = classes.of(chars[a + k]);
    const size_t tail = std::min<size_t>(kCharTail, b - a);
    for (size_t k = 0; k < tail; ++k) out[i].chars[kCharSlots - tail + k] = classes.of(chars[b - tail + k]);
  }
  return out;
}

std::vector<LineStyle> page_line_styles(const std::vector<ReadLine>& lines) {
  std::vector<int> xhs;
  std::vector<double> inks;
  for (const ReadLine& l : lines) xhs.push_back(l.x_height), inks.push_back(line_ink(l));
  const double med_xh = std::max(1.0, upper_median(xhs, 10)), med_ink = std::max(1e-3, upper_median(inks, 0.1));
  std::vector<LineStyle> out;
  for (const ReadLine& l : lines) {
    int letters = 0, upper = 0;
    for (char32_t cp : decode_utf8(l.text()).cps) letters += is_alpha(cp), upper += is_alpha(cp) && is_upper(cp);
    LineStyle s;
    s.size = std::max(1, l.x_height) / med_xh;
    s.weight = std::max(1e-3, line_ink(l)) / med_ink;
    s.caps = letters >= 2 && upper >= 0.8 * letters;
    s.indent = (l.x0 - l.region_x0) / med_xh;
    s.centred = s.indent > kCentredIndent &&
                std::abs((l.x0 + l.x1) / 2.0 - (l.region_x0 + l.region_x1) / 2.0) <= kCentredShare * std::max(1, l.region_x1 - l.region_x0);
    out.push_back(s);
  }
  return out;
}

}  // namespace folio
