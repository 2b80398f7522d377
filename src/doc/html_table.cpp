#include "doc/html_table.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "text/utf8.h"

namespace folio {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Cell text: tags dropped (<br> -> space), entities decoded, whitespace collapsed, '|' escaped.
std::string cell_text(std::string_view raw) {
  std::string decoded;
  for (size_t i = 0; i < raw.size();) {
    if (raw[i] == '<') {
      const size_t close = raw.find('>', i);
      if (close == std::string_view::npos) {
        decoded += raw.substr(i);
        break;
      }
      const std::string tag = lower(raw.substr(i + 1, close - i - 1));
      if (tag.rfind("br", 0) == 0) decoded += ' ';
      i = close + 1;
    } else if (raw[i] == '&') {
      const size_t semi = raw.find(';', i);
      const std::string_view ent = semi == std::string_view::npos || semi - i > 10 ? std::string_view()
                                                                                   : raw.substr(i + 1, semi - i - 1);
      std::string rep;
      bool ok = true;
      if (ent == "amp") rep = "&";
      else if (ent == "lt") rep = "<";
      else if (ent == "gt") rep = ">";
      else if (ent == "quot") rep = "\"";
      else if (ent == "#39" || ent == "apos") rep = "'";
      else if (ent == "nbsp") rep = " ";
      else if (ent.size() >= 2 && ent[0] == '#') {
        const bool hex = ent[1] == 'x' || ent[1] == 'X';
        uint32_t cp = 0;
        const std::string_view digits = ent.substr(hex ? 2 : 1);
        ok = !digits.empty();
        for (char c : digits) {
          const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (hex && std::isxdigit(static_cast<unsigned char>(c))) ? std::tolower(c) - 'a' + 10
                                                                                : -1;
          if (d < 0) ok = false;
          cp = std::min<uint32_t>(cp * (hex ? 16 : 10) + static_cast<uint32_t>(std::max(d, 0)), 0x110000);
        }
        if (ok) append_utf8(rep, (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) ? char32_t(0xFFFD) : char32_t(cp));
      } else {
        ok = false;
      }
      if (ok) {
        decoded += rep;
        i = semi + 1;
      } else {
        decoded += '&';
        ++i;
      }
    } else {
      decoded += raw[i++];
    }
  }
  std::string out;
  bool space = false;
  for (char c : decoded) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Value of a numeric attribute such as colspan="2" inside a tag's text (1 when absent).
int span_attribute(const std::string& tag, std::string_view name) {
  const size_t p = tag.find(name);
  if (p == std::string::npos) return 1;
  size_t i = p + name.size();
  while (i < tag.size() && (tag[i] == ' ' || tag[i] == '=' || tag[i] == '"' || tag[i] == '\'')) ++i;
  int v = 0;
  while (i < tag.size() && std::isdigit(static_cast<unsigned char>(tag[i])) && v < 100000) v = v * 10 + (tag[i++] - '0');
  return v == 0 ? 1 : v;
}

}  // namespace

std::optional<std::string> html_table_to_markdown(std::string_view html) {
  const std::string low = lower(html);
  const size_t open = low.find("<table");
  const size_t end = low.rfind("</table>");
  if (open == std::string::npos || end == std::string::npos || end < open) return std::nullopt;
  if (low.find("<table", open + 6) != std::string::npos) return std::nullopt;  // nested

  std::vector<std::vector<std::string>> rows;
  bool in_row = false, in_cell = false;
  size_t cell_start = 0;
  auto close_cell = [&](size_t at) {
    if (!in_cell) return;
    rows.back().push_back(cell_text(html.substr(cell_start, at - cell_start)));
    in_cell = false;
  };
  auto close_row = [&](size_t at) {
    close_cell(at);
    if (in_row && rows.back().empty()) rows.pop_back();
    in_row = false;
  };
  size_t i = low.find('>', open);
  if (i == std::string::npos) return std::nullopt;
  ++i;
  while (i < end) {
    const size_t lt = low.find('<', i);
    if (lt == std::string::npos || lt >= end) break;
    const size_t gt = low.find('>', lt);
    if (gt == std::string::npos || gt > end) return std::nullopt;
    const std::string tag = low.substr(lt + 1, gt - lt - 1);
    auto is = [&](std::string_view name) {
      return tag.rfind(name, 0) == 0 && (tag.size() == name.size() || tag[name.size()] == ' ' ||
                                         tag[name.size()] == '/' || tag[name.size()] == '\t' || tag[name.size()] == '\n');
    };
    if (is("tr")) {
      close_row(lt);
      rows.emplace_back();
      in_row = true;
    } else if (is("/tr")) {
      close_row(lt);
    } else if (is("td") || is("th")) {
      if (span_attribute(tag, "colspan") > 1 || span_attribute(tag, "rowspan") > 1) return std::nullopt;
      close_cell(lt);
      if (!in_row) {
        rows.emplace_back();
        in_row = true;
      }
      in_cell = true;
      cell_start = gt + 1;
    } else if (is("/td") || is("/th")) {
      close_cell(lt);
    }
    i = gt + 1;
  }
  close_row(end);
  if (rows.empty()) return std::nullopt;
  size_t cols = 0;
  for (const auto& r : rows) cols = std::max(cols, r.size());
  std::string md;
  auto emit = [&](const std::vector<std::string>& r) {
    md += '|';
    for (size_t c = 0; c < cols; ++c) {
      md += ' ';
      if (c < r.size()) md += r[c];
      md += " |";
    }
    md += '\n';
  };
  emit(rows[0]);
  md += '|';
  for (size_t c = 0; c < cols; ++c) md += " --- |";
  md += '\n';
  for (size_t r = 1; r < rows.size(); ++r) emit(rows[r]);
  md.pop_back();  // no trailing newline
  return md;
}

std::string convert_html_tables(std::string_view text) {
  const std::string low = lower(text);
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t open = low.find("<table", pos);
    if (open == std::string::npos) break;
    // The table ends at the first </table> unless another <table> opens before it (nested).
    size_t depth = 0, i = open, close = std::string::npos;
    while (i < low.size()) {
      const size_t o = low.find("<table", i), c = low.find("</table>", i);
      if (c == std::string::npos) break;
      if (o != std::string::npos && o < c) {
        ++depth;
        i = o + 6;
      } else {
        if (--depth == 0) {
          close = c + 8;
          break;
        }
        i = c + 8;
      }
    }
    if (close == std::string::npos) break;  // truncated table: left as written
    out += text.substr(pos, open - pos);
    const std::string_view table = text.substr(open, close - open);
    if (auto md = html_table_to_markdown(table)) {
      out += *md;
    } else {
      out += table;
    }
    pos = close;
  }
  out += text.substr(pos);
  return out;
}

}  // namespace folio
