// Parsing the raw text Unlimited-OCR generates into pages of labelled, boxed blocks.
//
// The model writes, per layout block, a marker followed by the block's text (docs/deepencoder.md 7
// and the official re_match()):
//     <|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>text...
//     <|det|>label [x1, y1, x2, y2]<|/det|>text...
// with coordinates normalised to 0..999 of the page; multi-page output puts the plain text <PAGE>
// before every page.
//
// Promises: parse_ocr_output never throws and never drops text. Specifically:
//  - a trailing "<｜end▁of▁sentence｜>" and surrounding whitespace are removed;
//  - with <PAGE> markers, each one starts a page; text before the first (the official code drops
//    it) is kept at the start of the first page when it is not blank; without markers the whole
//    text is one page;
//  - text before the first block of a page becomes a block with an empty label and no box;
//  - a block's text runs to the next marker and is trimmed of surrounding whitespace;
//  - malformed markup degrades, it does not fail: a box list that is not whole groups of four
//    integers gives a block with no boxes; an unterminated <|det|> keeps a leading "label [..]"
//    as the marker if there is one and the rest as text; an unterminated <|ref|> is dropped with
//    its label when it ends the page (truncated output), otherwise only the tag is dropped; stray
//    <|/ref|>, <|/det|> and <|grounding|> tags are removed from text.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

using OcrBox = std::array<int, 4>;  // x1, y1, x2, y2

struct OcrBlock {
  std::string label;           // e.g. "title", "text", "table", "image"; "" for unmarked text
  std::vector<OcrBox> boxes;   // normalised 0..999 as written by the model (usually one)
  std::string text;
  // An image block whose picture was written to a file (runtime/ocr_figure_files.h): the file as
  // the markdown links it, and the link's text (its caption, or "Figure N").
  std::string image_file, image_alt;
};

struct OcrPage {
  std::vector<OcrBlock> blocks;
};

std::vector<OcrPage> parse_ocr_output(std::string_view raw);

// A normalised box in pixels of a width x height page, as the official code maps it:
// int(c / 999 * size) per coordinate, with c clamped to 0..999 first.
OcrBox box_to_pixels(const OcrBox& normalised, int width, int height);

// A box in pixels of a width x height page, normalised as the model writes it: round(c * 999 / size)
// per coordinate, clamped to 0..999 (box_to_pixels' inverse up to rounding).
OcrBox pixels_to_box(const OcrBox& pixels, int width, int height);

}  // namespace folio
