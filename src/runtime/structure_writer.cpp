#include "runtime/structure_writer.h"

#include <algorithm>
#include <array>

namespace folio {

namespace {

constexpr std::array<std::string_view, kStructureActions> kNames = {
    "PARA", "JOIN", "JOIN_TIGHT", "DEHYPHEN", "H1", "H2", "H3", "BULLET", "NUMBERED", "CODE", "ROW", "FURNITURE", "SKIP"};

// structure.py's BULLET_GLYPHS.
constexpr std::array<std::string_view, 12> kBullets = {"•", "–", "-", "*", "·", "▪", "◦", "‣", "○", "●", "■", "□"};

std::string_view lstrip(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// A bulleted item's text without its own bullet glyph (Python: lstrip, drop t[0] if a bullet, lstrip).
std::string strip_bullet(std::string_view t) {
  t = lstrip(t);
  // Each bullet is one whole character, so starting with it is being it first.
  for (std::string_view b : kBullets)
    if (t.starts_with(b)) return std::string(lstrip(t.substr(b.size())));
  return std::string(t);
}

std::string join(const std::vector<std::string>& cells, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? std::string(sep) : "") + cells[i];
  return out;
}

bool is_list(StructureAction a) { return a == StructureAction::Bullet || a == StructureAction::Numbered; }

}  // namespace

std::string_view structure_action_name(StructureAction a) { return kNames[static_cast<size_t>(a)]; }

std::optional<StructureAction> structure_action_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<StructureAction>(i);
  return std::nullopt;
}

std::string StructureWriter::close_block() {
  std::string out;
  if (held_hyphen_) out += "-", held_hyphen_ = false;
  if (block_ == Block::Code) out += "\n```";
  if (block_ == Block::Row && table_rows_ == 1) out += "\n|" + [&] {
    std::string s;
    for (int i = 0; i < table_width_; ++i) s += "---|";
    return s;
  }();
  block_ = Block::None;
  return out;
}

std::string StructureWriter::push(StructureAction a, const std::vector<std::string>& cells, int depth) {
  using A = StructureAction;
  if (a == A::Skip) return "";
  std::string text = join(cells, " ");
  const bool continues = a == A::Join || a == A::JoinTight || a == A::Dehyphen;
  std::string out;
  if (continues && (block_ == Block::Text || block_ == Block::List)) {
    if (!held_hyphen_) a = A::Join;  // JOIN_TIGHT and DEHYPHEN only ever follow a hyphen
    if (a == A::Dehyphen) held_hyphen_ = false;
    if (held_hyphen_) out += "-", held_hyphen_ = false;
    if (a == A::Join && block_has_text_) out += " ";
  } else {
    if (continues) a = A::Para;
    // A code line or a table row continues its block; anything else closes it and starts another.
    if ((a == A::Code && block_ == Block::Code) || (a == A::Row && block_ == Block::Row)) {
      out += "\n";
      if (a == A::Row && ++table_rows_ == 2) {
        out += "|";
        for (int i = 0; i < table_width_; ++i) out += "---|";
        out += "\n";
      }
      out += a == A::Row ? "| " + join(cells, " | ") + " |" : text;
      return out;
    }
    const bool same_list = block_ == Block::List && is_list(a) && a == kind_;
    out += close_block();
    if (any_block_) out += same_list ? "\n" : "\n\n";
    any_block_ = true;
    kind_ = a;
    block_has_text_ = false;
    switch (a) {
      case A::H1: case A::H2: case A::H3:
        out += std::string(static_cast<size_t>(static_cast<int>(a) - static_cast<int>(A::H1) + 1), '#') + " ";
        block_ = Block::Text;
        break;
      case A::Bullet:
        out += std::string(size_t(std::max(0, 2 * depth)), ' ') + "- ";
        text = strip_bullet(text);
        block_ = Block::List;
        break;
      case A::Numbered:
        block_ = Block::List;
        break;
      case A::Code:
        block_ = Block::Code;
        return out + "```\n" + text;
      case A::Row:
        block_ = Block::Row;
        table_rows_ = 1;
        table_width_ = static_cast<int>(cells.size());
        return out + "| " + join(cells, " | ") + " |";
      case A::Furniture:
        block_ = Block::Furniture;
        return out + text;
      default:
        block_ = Block::Text;
        break;
    }
  }
  if (!text.empty()) block_has_text_ = true;
  if (!text.empty() && text.back() == '-') {
    text.pop_back();
    held_hyphen_ = true;
  }
  return out + text;
}

std::string StructureWriter::block(std::string_view markdown) {
  std::string out = close_block();
  if (any_block_) out += "\n\n";
  any_block_ = true;
  block_has_text_ = false;
  return out + std::string(markdown);
}

std::string StructureWriter::page_break(std::string_view marker) {
  std::string out = close_block();
  any_block_ = false;
  return out + std::string(marker);
}

std::string StructureWriter::finish() {
  std::string out = close_block();
  any_block_ = false;
  return out;
}

}  // namespace folio
