#include "doc/ocr_output.h"

#include <algorithm>
#include <cmath>

namespace folio {
namespace {

constexpr std::string_view kRef = "<|ref|>";
constexpr std::string_view kRefEnd = "<|/ref|>";
constexpr std::string_view kDet = "<|det|>";
constexpr std::string_view kDetEnd = "<|/det|>";
constexpr std::string_view kGrounding = "<|grounding|>";
constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kPage = "<PAGE>";
constexpr size_t npos = std::string_view::npos;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '-'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Start of the next <|ref|> or <|det|> at or after `from`, scanning once.
size_t next_marker(std::string_view s, size_t from) {
  for (size_t p = s.find("<|", from); p != npos; p = s.find("<|", p + 1)) {
    if (s.compare(p, kRef.size(), kRef) == 0 || s.compare(p, kDet.size(), kDet) == 0) return p;
  }
  return npos;
}

// Position of `tag` in s[from, limit), or npos. Searching only up to the next marker keeps parsing
// linear even when the output is full of unterminated markers.
size_t find_before(std::string_view s, std::string_view tag, size_t from, size_t limit) {
  const size_t end = std::min(limit, s.size());
  if (from >= end) return npos;
  const size_t p = s.substr(from, end - from).find(tag);
  return p == npos ? npos : from + p;
}

// Whole groups of four integers in a bracketed list ("[1, 2, 3, 4]" or "[[..], [..]]").
// Anything else (letters, a count not divisible by four, no numbers) gives no boxes.
std::vector<OcrBox> parse_boxes(std::string_view s) {
  std::vector<int> nums;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '[' || c == ']' || c == ',' || is_space(c)) {
      ++i;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      const bool neg = c == '-';
      if (neg) ++i;
      if (i >= s.size() || s[i] < '0' || s[i] > '9') return {};
      long v = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        v = std::min(v * 10 + (s[i] - '0'), 1000000L);
        ++i;
      }
      nums.push_back(static_cast<int>(neg ? -v : v));
    } else {
      return {};
    }
  }
  std::vector<OcrBox> boxes;
  if (nums.empty() || nums.size() % 4 != 0) return boxes;
  for (size_t i = 0; i < nums.size(); i += 4) boxes.push_back({nums[i], nums[i + 1], nums[i + 2], nums[i + 3]});
  return boxes;
}

// Matches an optional label and a balanced bracketed box list at the start of s:
// "label [1, 2, 3, 4]" or "[[1, 2, 3, 4]]". Returns the bytes consumed, or 0 without a match.
size_t match_label_and_boxes(std::string_view s, std::string& label, std::vector<OcrBox>& boxes) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  const size_t label_start = i;
  if (i < s.size() && is_ident_start(s[i])) {
    while (i < s.size() && is_ident(s[i])) ++i;
  }
  const size_t label_end = i;
  while (i < s.size() && is_space(s[i])) ++i;
  if (i >= s.size() || s[i] != '[') return 0;
  const size_t open = i;
  int depth = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    if (s[i] == ']' && --depth == 0) break;
    if (s[i] != '[' && s[i] != ']' && s[i] != ',' && s[i] != '-' && !is_space(s[i]) && (s[i] < '0' || s[i] > '9')) {
      return 0;
    }
  }
  if (i >= s.size()) return 0;  // unbalanced: truncated
  label = std::string(s.substr(label_start, label_end - label_start));
  boxes = parse_boxes(s.substr(open, i + 1 - open));
  return i + 1;
}

// What is left when output stops in the middle of a marker: a label and/or part of a box list.
bool is_partial_marker(std::string_view s) {
  s = trim(s);
  if (s.size() > 96) return false;
  size_t i = 0;
  while (i < s.size() && is_ident(s[i])) ++i;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (!(c == '[' || c == ']' || c == ',' || c == '-' || is_space(c) || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

std::string clean_text(std::string_view s) {
  std::string out(s);
  for (std::string_view tag : {kRefEnd, kDetEnd, kGrounding}) {
    for (size_t p = 0; (p = out.find(tag, p)) != std::string::npos;) out.erase(p, tag.size());
  }
  return std::string(trim(out));
}

OcrPage parse_page(std::string_view s) {
  OcrPage page;
  OcrBlock cur;
  bool cur_marked = false;
  std::string text;
  auto finish = [&](OcrBlock next, bool marked) {
    cur.text = clean_text(text);
    if (cur_marked || !cur.text.empty()) page.blocks.push_back(std::move(cur));
    cur = std::move(next);
    cur_marked = marked;
    text.clear();
  };
  size_t pos = 0;
  for (;;) {
    const size_t m = next_marker(s, pos);
    text += s.substr(pos, m == npos ? npos : m - pos);
    if (m == npos) break;
    const bool is_ref = s.compare(m, kRef.size(), kRef) == 0;
    const size_t after = m + (is_ref ? kRef.size() : kDet.size());
    const size_t following = next_marker(s, after);
    const size_t close = find_before(s, is_ref ? kRefEnd : kDetEnd, after, following);
    const bool terminated = close != npos;
    OcrBlock block;
    if (is_ref && terminated) {
      block.label = std::string(trim(s.substr(after, close - after)));
      pos = close + kRefEnd.size();
      size_t q = pos;
      while (q < s.size() && is_space(s[q])) ++q;
      if (s.compare(q, kDet.size(), kDet) == 0) {  // the boxes of the ref form
        const size_t d = q + kDet.size();
        const size_t dfollow = next_marker(s, d);
        const size_t dclose = find_before(s, kDetEnd, d, dfollow);
        if (dclose != npos) {
          block.boxes = parse_boxes(trim(s.substr(d, dclose - d)));
          pos = dclose + kDetEnd.size();
        } else {
          std::string ignored;
          const size_t used = match_label_and_boxes(s.substr(d, dfollow == npos ? npos : dfollow - d), ignored, block.boxes);
          pos = d + used;
          if (used == 0 && dfollow == npos && is_partial_marker(s.substr(d))) pos = s.size();
        }
      }
      finish(std::move(block), true);
    } else if (is_ref) {
      // Unterminated <|ref|>: a label cut off by the end of the output is markup; anything else
      // is text the model wrote after a stray tag.
      const std::string_view rest = s.substr(after, following == npos ? npos : following - after);
      pos = (following == npos && is_partial_marker(rest) && rest.find('\n') == npos) ? s.size() : after;
    } else if (terminated) {
      const std::string_view content = s.substr(after, close - after);
      if (match_label_and_boxes(content, block.label, block.boxes) == 0) {
        // No box list: take a leading word as the label (the rest is markup either way).
        const std::string_view t = trim(content);
        size_t i = 0;
        while (i < t.size() && is_ident(t[i])) ++i;
        block.label = std::string(t.substr(0, i));
      }
      pos = close + kDetEnd.size();
      finish(std::move(block), true);
    } else {
      const std::string_view rest = s.substr(after, following == npos ? npos : following - after);
      const size_t used = match_label_and_boxes(rest, block.label, block.boxes);
      if (used > 0) {
        pos = after + used;
        finish(std::move(block), true);
      } else {
        pos = (following == npos && is_partial_marker(rest)) ? s.size() : after;
      }
    }
  }
  finish(OcrBlock{}, false);
  return page;
}

}  // namespace

std::vector<OcrPage> parse_ocr_output(std::string_view raw) {
  raw = trim(raw);
  if (raw.size() >= kEos.size() && raw.substr(raw.size() - kEos.size()) == kEos) raw.remove_suffix(kEos.size());
  raw = trim(raw);
  std::vector<OcrPage> pages;
  size_t first = raw.find(kPage);
  if (first == npos) {
    pages.push_back(parse_page(raw));
    return pages;
  }
  const std::string_view preamble = trim(raw.substr(0, first));
  size_t start = first + kPage.size();
  bool first_page = true;
  for (;;) {
    const size_t next = raw.find(kPage, start);
    std::string_view body = raw.substr(start, next == npos ? npos : next - start);
    if (first_page && !preamble.empty()) {
      pages.push_back(parse_page(std::string(preamble) + "\n\n" + std::string(body)));
    } else {
      pages.push_back(parse_page(body));
    }
    first_page = false;
    if (next == npos) break;
    start = next + kPage.size();
  }
  return pages;
}

OcrBox box_to_pixels(const OcrBox& b, int width, int height) {
  auto map = [](int c, int size) { return static_cast<int>(std::clamp(c, 0, 999) / 999.0 * size); };
  return {map(b[0], width), map(b[1], height), map(b[2], width), map(b[3], height)};
}

OcrBox pixels_to_box(const OcrBox& p, int width, int height) {
  auto map = [](int c, int size) { return std::clamp(static_cast<int>(std::lround(999.0 * c / std::max(1, size))), 0, 999); };
  return {map(p[0], width), map(p[1], height), map(p[2], width), map(p[3], height)};
}

}  // namespace folio
