// multipart/form-data bodies as curl -F and browsers send them, and the malformed ones refused.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/multipart.h"

namespace folio {
namespace {

std::string code_of(const std::string& type, const std::string& body) {
  try {
    parse_multipart_form(type, body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.code;
  }
  return "";
}

TEST(Multipart, PartsComeOutInOrderWithTheirNamesFilenamesTypesAndBytes) {
  const std::string bin("\x89PNG\r\n--not-the-boundary\r\n\0\x01", 28);
  const std::string body = "preamble to skip\r\n--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"file\"; filename=\"a;b.png\"\r\n"
                           "content-type: image/png\r\n\r\n" + bin + "\r\n--XyZ\r\n"
                           "content-disposition: form-data; name=pages\r\n\r\n1-3\r\n--XyZ--\r\n";
  const std::vector<FormPart> parts = parse_multipart_form("multipart/form-data; boundary=\"XyZ\"", body);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "file");
  EXPECT_EQ(parts[0].filename, "a;b.png");
  EXPECT_EQ(parts[0].content_type, "image/png");
  EXPECT_EQ(parts[0].content, bin);
  EXPECT_EQ(parts[1].name, "pages");
  EXPECT_EQ(parts[1].filename, "");
  EXPECT_EQ(parts[1].content, "1-3");
  // Unquoted boundary, another parameter after it, and an empty part.
  const std::vector<FormPart> empty = parse_multipart_form("multipart/form-data; BOUNDARY=b1; charset=utf-8",
                                                           "--b1\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n\r\n--b1--");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].content, "");
}

TEST(Multipart, MalformedBodiesAreRefusedSayingWhy) {
  const std::string ok_part = "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nv\r\n";
  EXPECT_EQ(code_of("multipart/form-data", ok_part + "--b--"), "invalid_multipart");              // no boundary
  EXPECT_EQ(code_of("multipart/form-data; boundary=c", ok_part + "--b--"), "invalid_multipart");  // another boundary
  EXPECT_EQ(code_of("multipart/form-data; boundary=b", ok_part), "invalid_multipart");            // never closed
  EXPECT_EQ(code_of("multipart/form-data; boundary=b", "--b\r\nContent-Type: text/plain\r\n\r\nv\r\n--b--"), "invalid_multipart");
  EXPECT_EQ(code_of("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data\r\n\r\nv\r\n--b--"), "invalid_multipart");
  EXPECT_EQ(code_of("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=x\r\nv\r\n--b--"), "invalid_multipart");
  EXPECT_EQ(code_of("multipart/form-data; boundary=b", ok_part + "--b--"), "");
}

}  // namespace
}  // namespace folio
