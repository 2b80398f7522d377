// Contents pages and indexes: which lines of a page are entries, and what each line writes, for the
// mini OCR models. Their structure decoder sees a line's geometry and only its first and last
// characters, and wrote contents entries as paragraphs, one-cell table rows or code, with their page
// numbers lost or run into the text (docs/mini-ocr.md, "Contents pages and indexes"). The C++ twin
// of tools/train/mini4/contents_lines.py (keep them in step; tests/runtime/contents_lines_test.cpp
// compares them on fixture pages).
//
// Candidates. A line is one when its last segment is a page list (numbers of 1-4 digits joined by
// commas and dashes, "3, 17-19", or one roman numeral of up to 8 letters in one case) and the
// segments before it hold a letter; or when its text ends in a page list after a dot leader read as
// dots, after a comma or colon (an index's "term, 3, 17-19"), or (a led line, page_layout.h) after a
// space.
//
// Pages. A page is a contents page (or an index) when it has kMinEntries candidates and kMinLed of
// them are strong (led, dotted, or after a comma or colon), or a line reads as a contents title
// ("Contents", "Table of Contents", "Index", "Inhalt", "Table des matieres", ...), or kMinOrdered of
// them have arabic page numbers that do not decrease (kOrderedShare of successive pairs: a contents
// page's numbers grow, a table's figures do not).
//
// Entries. On such a page every candidate is an entry, and so is a line of two or more segments
// whose last one, where its page number stands, reads as a number once letters that look like
// digits are taken for them (l and ] for 1, O for 0, ...: a scan's lone digits), or was read as
// marks or nothing (written without a number). A run of up to kMaxWrap lines that are neither, with
// letters and longer than two characters (not an index's letter heading), between two entries, is
// part of a title too long for one line: the start of the entry after when that entry hangs further
// in than the run's first line by more than the median entry's x-height and does not start with a
// digit (the rest of a title, not a numbered subsection: LaTeX sets the number on the title's last
// line); else the rest of the entry before (the number beside the title's first line) when its first
// line is set no further out than that entry's first line and does not start with a digit or read
// as a contents title; else the decoder's. An entry's level is the rank of its first line's indent
// (x0 less its column's left edge) among the page's entries', grouped within the median entry's
// x-height of the group's first; at most kMaxLevel.
//
// Entries are written as bulleted items nested by level ("  " per level): the title, " — " and the
// page list (the title alone when none was read); a leader left in the text is dropped.
// Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vision/line_features.h"

namespace folio {

struct ContentsLineRule {
  static constexpr int kMinEntries = 4;
  static constexpr int kMinLed = 2;
  static constexpr int kMinOrdered = 8;         // entries with arabic page numbers, ...
  static constexpr double kOrderedShare = 0.9;  // ... this share of their successive pairs not decreasing
  static constexpr int kMaxLevel = 3;
  static constexpr int kMaxWrap = 3;  // lines of one title without its page number
};

enum class ContentsPart {
  Entry,         // the line that writes the entry: its title (whole) and page number
  Start,         // the first part of the next line's entry
  Continuation,  // the rest of the line before's entry
};

struct ContentsEntry {
  ContentsPart part = ContentsPart::Entry;
  int level = 0;
  std::string title;  // an Entry's whole title; a part's own text
  std::string page;
};

// One per line of the page: the entry it is, or nothing (not a contents page, or not an entry).
std::vector<std::optional<ContentsEntry>> contents_entries(const std::vector<ReadLine>& lines);

// What a line writes: a bulleted item at its level (contents_text), or a paragraph of its text.
struct ContentsWrite {
  bool item = true;
  int level = 0;
  std::string text;
};

// The writer's plan, one per line: nullopt (the decoder's choice) or what the line writes, in order.
// On a page read in one column, contents_entries' items (a wrapped title's parts write nothing). A
// page whose rows are two entries side by side (an index set in two columns without leaders, whose
// rows the layout paired as a table's: at least kMinEntries lines, and half of those of two or more
// segments, part at their widest gap into two candidates) is planned column by column: the
// segments ending before the right column's edge (the upper median of those gaps' right sides) are
// the left column's, the others the right's (indents from that edge); contents_entries plans the left
// column's parts and then the right's as one page; each line writes its left part (a part that is no
// entry as a paragraph), and the last line with a segment the right column after it.
std::vector<std::optional<std::vector<ContentsWrite>>> contents_writes(const std::vector<ReadLine>& lines);

// An entry's text as its item shows it: the title, " — ", the page (the title alone when no page
// number was read). StructureWriter::push(Bullet, {text}, level) writes the nested item.
std::string contents_text(const ContentsEntry& entry);

}  // namespace folio
