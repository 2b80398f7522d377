// HTML tables (as Unlimited-OCR writes them) -> Markdown pipe tables.
//
// Promises: html_table_to_markdown converts one <table>...</table> whose cells are plain (no
// colspan / rowspan above 1, no nested table) into a pipe table: the first row is the header, short
// rows are padded with empty cells, cell text has inner tags removed (<br> becomes a space),
// entities &amp; &lt; &gt; &quot; &#39; &apos; &nbsp; and numeric ones decoded, whitespace
// collapsed and "|" escaped as "\|". It returns nullopt for anything else (merged cells, no rows,
// no closing tag), and callers then keep the HTML, which Markdown renderers display as is.
// convert_html_tables applies this to every complete table inside a text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace folio {

std::optional<std::string> html_table_to_markdown(std::string_view html);

std::string convert_html_tables(std::string_view text);

}  // namespace folio
