// StructureWriter: the markdown folio-mini-ocr 2 writes, produced line by line as its decoder
// chooses one action per text line. The C++ twin of render_markdown / render_document in
// tools/train/mini2/structure.py (keep them in step; tests/runtime/structure_writer_test compares
// them on sequences rendered by the Python side).
//
// Actions (StructureAction) say what a line is: the start of a paragraph, heading, bulleted or
// numbered item, a line of code, a table row (its segments are the cells), running furniture, a
// continuation of the current block (with a space, with none, or with its previous line's final
// hyphen removed), or nothing (SKIP). Promises, per page (a block never spans a page break):
//  - blocks are separated by a blank line, items of one list by a newline; headings get "#" marks,
//    bulleted items "- " (their own bullet glyph dropped), code lines a fence, rows "| a | b |" with
//    a separator after a table's first row as wide as that row;
//  - a continuation with no block to continue starts a paragraph; JOIN_TIGHT and DEHYPHEN after a
//    line that does not end in a hyphen join as JOIN does;
//  - text comes out as soon as it is final: a line's final hyphen waits for the next action, a fence
//    or one-row table separator for the end of its block.
// Not thread-safe; one writer per document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

enum class StructureAction : int32_t {
  Para, Join, JoinTight, Dehyphen, H1, H2, H3, Bullet, Numbered, Code, Row, Furniture, Skip,
};
inline constexpr int32_t kStructureActions = 13;

// "PARA", "JOIN", ... (the names of structure.py's ACTIONS, in id order).
std::string_view structure_action_name(StructureAction a);
std::optional<StructureAction> structure_action_from_name(std::string_view name);

class StructureWriter {
 public:
  // The markdown that line's action adds (cells: the line's segments, in order). `depth`: a
  // bulleted item's nesting, "  " per level before its "- " (contents entries, contents_lines.h).
  std::string push(StructureAction action, const std::vector<std::string>& cells, int depth = 0);
  // A block of its own between the lines (a figure's image block): closes the open block.
  std::string block(std::string_view markdown);
  // Ends the page: what its open block still owes, then `marker`.
  std::string page_break(std::string_view marker);
  // Ends the document: what its open block still owes.
  std::string finish();

 private:
  enum class Block { None, Text, List, Code, Row, Furniture };
  std::string close_block();

  Block block_ = Block::None;
  StructureAction kind_ = StructureAction::Para;  // the open block's starting action
  bool any_block_ = false;     // on this page
  bool block_has_text_ = false;
  bool held_hyphen_ = false;   // the open block's text ends in a "-" not yet written
  int table_rows_ = 0, table_width_ = 0;
};

}  // namespace folio
