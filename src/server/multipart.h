// multipart/form-data bodies (RFC 7578): the parts of an upload, in order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace folio {

// One part: its field name, the filename when it is a file, its Content-Type ("" if none), and
// its bytes exactly as sent.
struct FormPart {
  std::string name;
  std::string filename;
  std::string content_type;
  std::string content;
};

// Splits `body` by the boundary named in `content_type` ("multipart/form-data; boundary=...",
// quoted or not). Parameter names and the part headers' names compare without case; a preamble
// before the first boundary is skipped. ApiError 400 "invalid_multipart" saying what is wrong: no
// boundary, no first boundary, a part without its header block, without a form-data
// Content-Disposition or a name, or a body that ends before the closing boundary.
std::vector<FormPart> parse_multipart_form(const std::string& content_type, std::string_view body);

}  // namespace folio
