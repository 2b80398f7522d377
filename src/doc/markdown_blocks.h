// markdown_blocks: a page of markdown as the OCR output's labelled blocks, for models that write
// markdown rather than blocks (the mini OCR models, whose structure decoder decides what each line
// is): one block per piece separated by a blank line outside code fences, labelled by how it
// starts: "title" (#), "sub_title" (## and deeper), "code" (a fence), "table" (|), "list" (- or a
// number and a dot), otherwise "text"; a block that is exactly an image block as page_markdown
// writes it ("<!-- image [x0, y0, x1, y1] -->") is an "image" block with that box and no text.
// No other boxes.
//
// Promise: page_markdown() of the blocks (ocr_markdown.h joins them with a blank line) is the
// markdown given, byte for byte, so the page's markdown does not change by being split; a run of
// more than two newlines stays inside the block before it. Pure; any thread.
#pragma once

#include <string_view>
#include <vector>

#include "doc/ocr_output.h"

namespace folio {

std::vector<OcrBlock> markdown_blocks(std::string_view markdown);

}  // namespace folio
