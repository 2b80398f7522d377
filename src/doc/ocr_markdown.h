// Markdown from parsed OCR pages.
//
// Promises, per page (the official post-processing, with two documented differences):
//  - blocks appear in output order, separated by one blank line; their text is kept as the model
//    wrote it (headings "#", lists, LaTeX), except that "\coloneqq" becomes ":=" and "\eqqcolon"
//    "=:" (as the official code does) and complete HTML tables are converted to pipe tables when
//    they have no merged cells (html_table.h), otherwise kept as HTML;
//  - an "image" block (a figure: the model gives its box, not its content) becomes the comment
//    "<!-- image [x1, y1, x2, y2] -->" with the normalised box, followed by any text the block has;
//    once its picture was written to a file (image_file), the link "![image_alt](image_file)"
//    instead of the comment. (The official code writes a crop of the page to images/N.jpg and
//    links it; folio writes the files in runtime/ocr_figure_files.h, not here.)
//  - blocks without text (other than images) produce nothing.
// document_markdown joins pages, each preceded by "<!-- page N -->" (1-based) when there is more
// than one page.
#pragma once

#include <string>
#include <vector>

#include "doc/ocr_output.h"

namespace folio {

std::string page_markdown(const OcrPage& page);

std::string document_markdown(const std::vector<OcrPage>& pages);

// Page `index` (0-based) of a document of `total` pages as document_markdown writes it, with the
// separator before it: document_markdown is these pieces one after another, so a document can be
// written page by page without holding its pages.
std::string document_markdown_piece(const OcrPage& page, size_t index, size_t total);

}  // namespace folio
