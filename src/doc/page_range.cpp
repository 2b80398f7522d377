#include "doc/page_range.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace folio {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<int> all_pages(int page_count) {
  std::vector<int> v(static_cast<size_t>(std::max(page_count, 0)));
  for (int i = 0; i < page_count; ++i) v[i] = i;
  return v;
}

std::vector<int> parse_page_range(std::string_view text, int page_count) {
  const std::string where = "page range '" + std::string(text) + "' (the document has " + std::to_string(page_count) +
                            (page_count == 1 ? " page)" : " pages)");
  auto fail = [&](const std::string& why) -> void { throw_invalid("invalid " + where + ": " + why); };
  auto number = [&](std::string_view s) -> int {
    s = trim(s);
    std::string quoted = "'";
    quoted.append(s);
    quoted += "' is not a page number";
    if (s.empty() || s.size() > 9) fail(quoted);
    int v = 0;
    for (char ch : s) {
      if (ch < '0' || ch > '9') fail(quoted);
      v = v * 10 + (ch - '0');
    }
    if (v < 1) fail("pages are numbered from 1");
    if (v > page_count) fail("page " + std::to_string(v) + " is beyond the last page");
    return v;
  };
  if (trim(text).empty()) fail("it is empty");
  std::vector<int> pages;
  std::vector<bool> seen(static_cast<size_t>(std::max(page_count, 0)) + 1, false);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = trim(text.substr(start, comma - start));
    if (item.empty()) fail("empty item between commas");
    int a, b;
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      a = b = number(item);
    } else {
      a = number(item.substr(0, dash));
      const std::string_view rest = trim(item.substr(dash + 1));
      b = rest.empty() ? page_count : number(rest);
      if (b < a) {
        std::string why = "'";
        why.append(item);
        why += "' runs backwards";
        fail(why);
      }
    }
    for (int p = a; p <= b; ++p) {
      if (seen[p]) fail("page " + std::to_string(p) + " is selected twice");
      seen[p] = true;
      pages.push_back(p - 1);
    }
    start = comma + 1;
  }
  return pages;
}

}  // namespace folio
