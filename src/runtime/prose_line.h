// reads_as_prose: whether a text line of a page reads as running prose rather than code, for the
// mini OCR models' decoder, which must not put prose in a code block. Man pages and manuals indent
// their body, options and descriptions as listings are indented, and the decoder, which sees a
// line's geometry and only its first and last characters, wrote a tenth of groff's lines inside
// code fences (docs/mini-ocr.md). The C++ twin of tools/train/mini3/prose_line.py (keep them in
// step; tests/runtime/prose_line_test.cpp compares them on fixture lines).
//
// A line reads as prose when it has at least kProseMinWords words, at least 70% of them words of
// letters (an apostrophe or hyphen inside, an opening bracket or quote before, punctuation after),
// at least two distinct English function words ("the", "of", "is", ...), and no sign of code: it
// does not start like a comment or a prompt (#, //, /*, *, --, ;, %, $, >), holds no call
// (`name(` other than a manual section such as read(2)) and no operator (==, ->, ::, &&, __, ...),
// does not end with a brace or a semicolon, is not a string in quotes, and does not open with a keyword of code (if, for,
// else, def, ...) while ending with ':', quoting a string or holding a word that is not one of
// letters. A line that does not read as prose is left to the decoder.
//
// is_option_term: a man page's option term (`-f FILE`, `-b | -bits`, `--empty=(stop|drop|keep)`),
// which is no code either: at most kOptionTermMaxWords words, the first an option (one or two
// dashes, a letter, then letters, digits, - or _, then `=` and anything or `[=...]`; a comma
// after), the others options, metavariables (a letter, then letters, digits, - _ . = |, inside
// [ ] < > { } ( ) if any; a comma after) or a lone | or ,. Pure; any thread.
#pragma once

#include <string_view>

namespace folio {

inline constexpr int kProseMinWords = 5;
inline constexpr int kOptionTermMaxWords = 6;

bool reads_as_prose(std::string_view line);
bool is_option_term(std::string_view line);

}  // namespace folio
