// How `folio bench accuracy` compares a markdown reading with a plain-text truth (held-out sets
// whose set.json says "compare": "normalised-text", such as the typeset pages of data/heldout,
// whose truth is `pdftotext -layout` of each page and has no markdown).
//
// Both sides go through scoring_text(); the model's markdown first through markdown_as_text().
// The rules mirror tools/train/mini2/eval_folio.py (normalise, markdown_to_text) and the
// recognizer's charset (tools/train/mini2/lines.py), so the figures of that script and of bench
// accuracy mean the same thing. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace folio {

// The text of a markdown page without its syntax: page comments ("<!-- page N -->"), code fences
// and table separator rows dropped; heading marks ("# ".."###### ") and list markers ("- ") taken
// off the start of a line; a table row "| a | b |" becomes "a b". Numbered list numbers stay (the
// truth has them).
std::string markdown_as_text(std::string_view markdown);

// The characters that are scored: ligatures (U+FB00-FB04) spelled out, dash variants (U+2010,
// U+2011, U+2212) as '-', soft hyphens dropped, space variants (tab, U+00A0, U+2002, U+2003,
// U+2009) as ' ', bullet glyphs dropped, any character outside the recognizer's charset (ASCII
// 32-126 and its Latin-1 / typographic extras) dropped, then every whitespace run (newlines
// included) one space, none at either end. Invalid UTF-8 bytes are dropped.
std::string scoring_text(std::string_view text);

}  // namespace folio
