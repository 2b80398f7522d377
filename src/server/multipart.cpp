#include "server/multipart.h"

#include "server/api_error.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace folio {

namespace {

ApiError invalid(const std::string& why) { return bad_request("invalid_multipart", "the multipart/form-data body is malformed: " + why); }

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The ';'-separated segments of a header value; a ';' inside quotes does not separate.
std::vector<std::string_view> segments(std::string_view header) {
  std::vector<std::string_view> out;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < header.size(); ++i) {
    if (quoted && header[i] == '\\') ++i;
    else if (header[i] == '"') quoted = !quoted;
    else if (header[i] == ';' && !quoted) out.push_back(header.substr(start, i - start)), start = i + 1;
  }
  out.push_back(header.substr(std::min(start, header.size())));
  return out;
}

// The value of parameter `name` in "type; a=b; name=\"v\"", unquoted (backslash escapes undone).
std::optional<std::string> parameter(std::string_view header, const std::string& name) {
  const std::vector<std::string_view> segs = segments(header);
  for (size_t k = 1; k < segs.size(); ++k) {
    const size_t eq = segs[k].find('=');
    if (eq == std::string_view::npos || lowered(trimmed(segs[k].substr(0, eq))) != name) continue;
    const std::string_view v = trimmed(segs[k].substr(eq + 1));
    if (v.size() < 2 || v.front() != '"') return std::string(v);
    std::string value;
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      if (v[i] == '\\' && i + 2 < v.size()) ++i;
      value += v[i];
    }
    return value;
  }
  return std::nullopt;
}

// Reads one part's header block (up to the blank line) into `part`.
void read_part_headers(std::string_view block, FormPart& part) {
  bool form_data = false;
  while (!block.empty()) {
    const size_t eol = std::min(block.find("\r\n"), block.size());
    const std::string_view line = block.substr(0, eol);
    block.remove_prefix(std::min(eol + 2, block.size()));
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) throw invalid("a part header without ':'");
    const std::string name = lowered(trimmed(line.substr(0, colon)));
    const std::string_view value = trimmed(line.substr(colon + 1));
    if (name == "content-type") part.content_type = std::string(value);
    if (name != "content-disposition") continue;
    form_data = lowered(value.substr(0, value.find(';'))) == "form-data";
    part.name = parameter(value, "name").value_or("");
    part.filename = parameter(value, "filename").value_or("");
  }
  if (!form_data) throw invalid("a part without 'Content-Disposition: form-data'");
  if (part.name.empty()) throw invalid("a part without a field name");
}

}  // namespace

std::vector<FormPart> parse_multipart_form(const std::string& content_type, std::string_view body) {
  const std::optional<std::string> boundary = parameter(content_type, "boundary");
  if (!boundary || boundary->empty()) throw invalid("the Content-Type names no boundary");
  const std::string delimiter = "--" + *boundary;
  size_t at = body.rfind(delimiter, 0) == 0 ? 0 : body.find("\r\n" + delimiter);
  if (at == std::string_view::npos) throw invalid("no '" + delimiter + "' line starts the parts");
  at = body.find(delimiter, at) + delimiter.size();
  std::vector<FormPart> parts;
  while (true) {
    if (body.substr(at, 2) == "--") return parts;  // the closing boundary
    if (body.substr(at, 2) != "\r\n") throw invalid("a boundary line that does not end with CRLF");
    at += 2;
    const size_t blank = body.find("\r\n\r\n", at);
    const bool no_headers = body.substr(at, 2) == "\r\n";
    if (blank == std::string_view::npos && !no_headers) throw invalid("a part without its blank line after the headers");
    FormPart part;
    read_part_headers(no_headers ? std::string_view() : body.substr(at, blank - at), part);
    const size_t start = no_headers ? at + 2 : blank + 4;
    const size_t end = body.find("\r\n" + delimiter, start);
    if (end == std::string_view::npos) throw invalid("the body ends before the closing boundary");
    part.content = std::string(body.substr(start, end - start));
    parts.push_back(std::move(part));
    at = end + 2 + delimiter.size();
  }
}

}  // namespace folio
