// Page selections such as "1-20", "3", "2,5-7", "4-" for multi-page documents.
//
// Promises: parse_page_range returns 0-based page indices in the order written. Pages are
// 1-based in the text; "a-b" is inclusive; "a-" runs to the last page; spaces around numbers and
// separators are allowed. Empty text, an empty item, a non-number, 0, a reversed range, a page
// beyond page_count, or a page selected twice is InvalidInput naming the range text and the page
// count.
#pragma once

#include <string_view>
#include <vector>

namespace folio {

std::vector<int> parse_page_range(std::string_view text, int page_count);

// All pages: 0 .. page_count - 1.
std::vector<int> all_pages(int page_count);

}  // namespace folio
