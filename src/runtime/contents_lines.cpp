#include "runtime/contents_lines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace folio {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool all_of_set(std::string_view s, std::string_view set) {
  return std::all_of(s.begin(), s.end(), [&](char c) { return set.find(c) != std::string_view::npos; });
}

bool is_page_number(std::string_view s) {
  if (s.empty()) return false;
  if (s.size() <= 4 && all_of_set(s, "0123456789")) return true;
  return s.size() <= 8 && (all_of_set(s, "ivxlcdm") || all_of_set(s, "IVXLCDM"));
}

bool has_letter(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

// The title without what is left of a leader at its end (a tail of dots and spaces that holds a
// space or two dots: a title's own final period, as in "etc.", stays) and without an index term's
// final comma or colon.
std::string clean_title(std::string_view t) {
  t = trim(t);
  while (!t.empty() && (t.back() == ',' || t.back() == ':')) t = trim(t.substr(0, t.size() - 1));
  size_t k = t.size();
  while (k > 0 && (t[k - 1] == '.' || t[k - 1] == ' ')) --k;
  const std::string_view tail = t.substr(k);
  if (tail.find(' ') != std::string_view::npos || std::count(tail.begin(), tail.end(), '.') >= 2) t = trim(t.substr(0, k));
  return std::string(t);
}

std::string joined(const std::vector<ReadSegment>& segs, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view c = trim(segs[i].text);
    if (c.empty()) continue;
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

bool ascii_digit(char c) { return c >= '0' && c <= '9'; }

// Start of the run of 1-4 digits ending at `end`, or npos.
size_t digits_before(std::string_view t, size_t end) {
  size_t k = end;
  while (k > 0 && ascii_digit(t[k - 1])) --k;
  return end - k >= 1 && end - k <= 4 ? k : std::string_view::npos;
}

// Start of the page list that ends the text (numbers of 1-4 digits joined by ',' or '-' and spaces,
// or one roman numeral) when the text holds it whole or a space, comma or colon stands before it;
// npos when none.
size_t page_list_start(std::string_view t) {
  const size_t space = t.rfind(' ');
  const std::string_view last = space == std::string_view::npos ? t : t.substr(space + 1);
  if (is_page_number(last) && !all_of_set(last, "0123456789")) return space == std::string_view::npos ? 0 : space + 1;
  size_t start = digits_before(t, t.size());
  if (start == std::string_view::npos) return start;
  for (;;) {
    size_t k = start;
    while (k > 0 && t[k - 1] == ' ') --k;
    if (k == 0 || (t[k - 1] != ',' && t[k - 1] != '-')) break;
    --k;
    while (k > 0 && t[k - 1] == '-') --k;  // an en dash read as two hyphens
    while (k > 0 && t[k - 1] == ' ') --k;
    const size_t more = digits_before(t, k);
    if (more == std::string_view::npos) break;
    start = more;
  }
  return start == 0 || t[start - 1] == ' ' || t[start - 1] == ',' || t[start - 1] == ':' ? start : std::string_view::npos;
}

bool is_page_list(std::string_view s) { return !s.empty() && page_list_start(s) == 0; }

// A page list as written: runs of hyphens (an en dash read as two) one hyphen.
std::string tidy_pages(std::string_view pages) {
  std::string out;
  for (char c : pages)
    if (c != '-' || out.empty() || out.back() != '-') out += c;
  return out;
}

struct Candidate {
  std::string title, page;
  bool strong = false;  // led, or its page list after a leader read as dots or after a comma or colon
};

std::optional<Candidate> candidate(const ReadLine& l) {
  const std::vector<ReadSegment>& segs = l.segments;
  if (segs.empty()) return std::nullopt;
  const std::string_view last = trim(segs.back().text);
  if (segs.size() >= 2 && is_page_list(last)) {
    std::string title = clean_title(joined(segs, segs.size() - 1));
    if (has_letter(title)) return Candidate{std::move(title), tidy_pages(last), l.led};
    return std::nullopt;
  }
  const std::string text = joined(segs, segs.size());
  const size_t at = page_list_start(text);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  std::string_view before = std::string_view(text).substr(0, at);
  while (!before.empty() && before.back() == ' ') before.remove_suffix(1);
  size_t k = before.size();
  while (k > 0 && (before[k - 1] == '.' || before[k - 1] == ' ')) --k;
  std::string_view title;
  if (std::count(before.begin() + std::ptrdiff_t(k), before.end(), '.') >= 3) title = before;
  else if (!before.empty() && (before.back() == ',' || before.back() == ':')) title = before.substr(0, before.size() - 1);
  else if (l.led) title = before;
  else return std::nullopt;
  std::string cleaned = clean_title(title);
  if (!has_letter(cleaned)) return std::nullopt;
  return Candidate{std::move(cleaned), tidy_pages(std::string_view(text).substr(at)), true};
}

bool has_letter_or_digit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

// A line of two or more segments whose last one reads as a page number once its spaces are dropped
// and letters that look like digits are taken for them (a scan's lone digits: l and ] for 1, O for
// 0, ...). Asked only on a contents page.
std::optional<Candidate> misread_number(const ReadLine& l) {
  if (l.segments.size() < 2) return std::nullopt;
  static constexpr std::string_view kFrom = "lI|][!OoQDSsZzBgq", kTo = "11111100005522899";
  std::string digits;
  for (char c : l.segments.back().text) {
    if (c == ' ') continue;
    const size_t k = kFrom.find(c);
    digits += k == std::string_view::npos ? c : kTo[k];
  }
  std::string title = clean_title(joined(l.segments, l.segments.size() - 1));
  if (digits.empty() || digits.size() > 4 || !all_of_set(digits, "0123456789") || !has_letter(title)) return std::nullopt;
  return Candidate{std::move(title), std::move(digits), false};
}

// A line of two or more segments whose last one, where its page number stands, was read as marks or
// nothing (at most 4 characters, no letter or digit): an entry with no number.
std::optional<Candidate> unread_number(const ReadLine& l) {
  if (l.segments.size() < 2) return std::nullopt;
  const std::string_view last = trim(l.segments.back().text);
  std::string title = clean_title(joined(l.segments, l.segments.size() - 1));
  if (last.size() > 4 || has_letter_or_digit(last) || !has_letter(title)) return std::nullopt;
  return Candidate{std::move(title), "", false};
}

bool is_contents_title(const ReadLine& l) {
  std::string t;
  for (char c : joined(l.segments, l.segments.size()))
    if (std::isalpha(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ' && !t.empty() && t.back() != ' ') t += ' ';
  t = std::string(trim(t));
  static constexpr std::array<std::string_view, 12> kTitles = {
      "index", "contents", "table of contents", "inhalt", "inhaltsverzeichnis", "table des matieres", "sommaire",
      "indice", "contenido", "contenidos", "spis tresci", "index of contents"};
  return std::find(kTitles.begin(), kTitles.end(), t) != kTitles.end();
}

// Whether kMinOrdered candidates have arabic page numbers and kOrderedShare of their successive
// pairs do not decrease.
bool ordered(const std::vector<std::optional<Candidate>>& cands) {
  std::vector<int> nums;
  for (const auto& c : cands)
    if (c && all_of_set(c->page, "0123456789")) nums.push_back(std::stoi(c->page));
  if (nums.size() < size_t(ContentsLineRule::kMinOrdered)) return false;
  size_t rising = 0;
  for (size_t i = 1; i < nums.size(); ++i) rising += nums[i] >= nums[i - 1];
  return double(rising) >= ContentsLineRule::kOrderedShare * double(nums.size() - 1);
}

int indent(const ReadLine& l) { return l.x0 - l.region_x0; }

// Levels: the rank of each indent among the page's entry indents, indents grouped within `tol` of
// their group's first (sorted ascending).
std::vector<int> indent_levels(const std::vector<int>& indents, int tol) {
  std::vector<int> sorted = indents;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> starts;
  for (int v : sorted)
    if (starts.empty() || v - starts.back() > tol) starts.push_back(v);
  std::vector<int> out;
  for (int v : indents) {
    int level = 0;
    while (level + 1 < int(starts.size()) && starts[size_t(level) + 1] <= v) ++level;
    out.push_back(std::min(level, ContentsLineRule::kMaxLevel));
  }
  return out;
}

}  // namespace

std::vector<std::optional<ContentsEntry>> contents_entries(const std::vector<ReadLine>& lines) {
  const size_t n = lines.size();
  std::vector<std::optional<ContentsEntry>> out(n);
  std::vector<std::optional<Candidate>> cands(n);
  int count = 0, led = 0;
  bool titled = false;
  for (size_t i = 0; i < n; ++i) {
    cands[i] = candidate(lines[i]);
    count += cands[i].has_value();
    led += cands[i].has_value() && cands[i]->strong;
    titled = titled || is_contents_title(lines[i]);
  }
  if (count < ContentsLineRule::kMinEntries || (led < ContentsLineRule::kMinLed && !titled && !ordered(cands))) return out;
  std::vector<int> heights;
  for (size_t i = 0; i < n; ++i) {
    if (!cands[i]) cands[i] = misread_number(lines[i]);
    if (!cands[i]) cands[i] = unread_number(lines[i]);
    if (cands[i]) heights.push_back(lines[i].x_height);
  }
  std::sort(heights.begin(), heights.end());
  const int tol = heights[heights.size() / 2];
  std::vector<std::string> text(n);  // each line's segments joined
  for (size_t i = 0; i < n; ++i) text[i] = joined(lines[i].segments, lines[i].segments.size());
  std::vector<std::pair<size_t, size_t>> entries;  // (an entry's line, its title's first line)
  std::optional<std::string> prefix;
  size_t prefix_at = 0;
  for (size_t i = 0; i < n;) {
    if (cands[i]) {
      std::string title = cands[i]->title;
      size_t first = i;
      if (prefix) title = *prefix + " " + title, first = prefix_at, prefix.reset();
      out[i] = ContentsEntry{ContentsPart::Entry, 0, std::move(title), cands[i]->page};
      entries.emplace_back(i, first);
      ++i;
      continue;
    }
    // A title too long for one line: up to kMaxWrap lines with letters between two entries are its
    // first part when the entry after hangs further in than the first of them and does not start
    // with a digit (the number on the title's last line, as LaTeX sets it), else the rest of the
    // entry before's (the number beside its first line).
    size_t j = i;
    while (j < n && j - i < size_t(ContentsLineRule::kMaxWrap) && !cands[j] && has_letter(text[j]) && text[j].size() > 2) ++j;
    if (i == 0 || !cands[i - 1] || j == i || j >= n || !cands[j]) {
      i = std::max(j, i + 1);
      continue;
    }
    const auto starts_with_digit = [](const std::string& t) { return !t.empty() && std::isdigit(static_cast<unsigned char>(t[0])); };
    const bool hangs = indent(lines[j]) > indent(lines[i]) + tol && !starts_with_digit(text[j]);
    // The rest of the entry before: set no further out than its first line, not a numbered entry of
    // its own (its number misread) nor a contents title.
    const bool rest = indent(lines[i]) >= indent(lines[entries.back().second]) &&
                      !starts_with_digit(text[i]) && !is_contents_title(lines[i]);
    if (!hangs && !rest) {
      i = j;
      continue;
    }
    std::string texts;
    for (size_t k = i; k < j; ++k) {
      std::string t = clean_title(text[k]);
      texts += (k > i ? " " : "") + t;
      out[k] = ContentsEntry{hangs ? ContentsPart::Start : ContentsPart::Continuation, 0, std::move(t), ""};
    }
    if (hangs) prefix = std::move(texts), prefix_at = i;
    else out[i - 1]->title += " " + texts;
    i = j;
  }
  std::vector<int> indents;
  for (const auto& [e, first] : entries) indents.push_back(indent(lines[first]));
  const std::vector<int> levels = indent_levels(indents, tol);
  for (size_t k = 0; k < entries.size(); ++k)
    for (size_t line = entries[k].second; line <= entries[k].first; ++line) out[line]->level = levels[k];
  return out;
}

namespace {

ReadLine part_of(const ReadLine& l, std::vector<ReadSegment> segs, int region_x0) {
  ReadLine p;
  p.x0 = segs.front().x0, p.region_x0 = region_x0, p.x_height = l.x_height, p.led = l.led;
  p.segments = std::move(segs);
  return p;
}

// The x where the line parts into two entry candidates side by side at its widest such gap, or -1.
int split_at(const ReadLine& l) {
  int best = -1, gap = -1;
  const std::vector<ReadSegment>& s = l.segments;
  for (size_t k = 1; k < s.size(); ++k) {
    const int g = s[k].x0 - s[k - 1].x1;
    if (g <= gap) continue;
    if (candidate(part_of(l, {s.begin(), s.begin() + std::ptrdiff_t(k)}, 0)) &&
        candidate(part_of(l, {s.begin() + std::ptrdiff_t(k), s.end()}, 0)))
      best = s[k].x0, gap = g;
  }
  return best;
}

// The right column's edge of a page of entries side by side, or -1.
int column_split(const std::vector<ReadLine>& lines) {
  std::vector<int> xs;
  size_t wide = 0;
  for (const ReadLine& l : lines) {
    if (l.segments.size() < 2) continue;
    ++wide;
    if (const int x = split_at(l); x >= 0) xs.push_back(x);
  }
  if (xs.size() < size_t(ContentsLineRule::kMinEntries) || 2 * xs.size() < wide) return -1;
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

std::vector<ContentsWrite> writes_of(const std::optional<ContentsEntry>& e, const ReadLine& l) {
  if (!e) {
    std::string text = joined(l.segments, l.segments.size());
    if (text.empty()) return {};
    return {ContentsWrite{false, 0, std::move(text)}};
  }
  if (e->part != ContentsPart::Entry) return {};
  return {ContentsWrite{true, e->level, contents_text(*e)}};
}

}  // namespace

std::vector<std::optional<std::vector<ContentsWrite>>> contents_writes(const std::vector<ReadLine>& lines) {
  std::vector<std::optional<std::vector<ContentsWrite>>> out(lines.size());
  const int split = column_split(lines);
  if (split < 0) {
    const std::vector<std::optional<ContentsEntry>> entries = contents_entries(lines);
    for (size_t i = 0; i < lines.size(); ++i)
      if (entries[i]) out[i] = writes_of(entries[i], lines[i]);
    return out;
  }
  std::vector<std::pair<size_t, ReadLine>> lefts, rights;  // (line, its part)
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<ReadSegment> left, right;
    for (const ReadSegment& s : lines[i].segments) (s.x1 <= split ? left : right).push_back(s);
    if (!left.empty()) lefts.emplace_back(i, part_of(lines[i], std::move(left), lines[i].region_x0));
    if (!right.empty()) rights.emplace_back(i, part_of(lines[i], std::move(right), split));
  }
  std::vector<ReadLine> parts;
  size_t last = 0;
  for (const auto* side : {&lefts, &rights})
    for (const auto& [i, p] : *side) parts.push_back(p), last = std::max(last, i);
  const std::vector<std::optional<ContentsEntry>> entries = contents_entries(parts);
  for (size_t i = 0; i < lines.size(); ++i) out[i].emplace();
  for (size_t k = 0; k < parts.size(); ++k) {
    const size_t line = k < lefts.size() ? lefts[k].first : last;
    for (ContentsWrite& w : writes_of(entries[k], parts[k])) out[line]->push_back(std::move(w));
  }
  return out;
}

std::string contents_text(const ContentsEntry& entry) {
  return entry.title + (entry.page.empty() ? "" : " \u2014 " + entry.page);
}

}  // namespace folio
