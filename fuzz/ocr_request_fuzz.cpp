// libFuzzer target: bytes -> POST /v1/ocr body parsing, as Service::ocr does it, plus base64.
//
// The first byte picks what the rest is:
//   0: a JSON body -> parse_ocr_json;
//   1: a multipart/form-data body with the boundary "folio<second byte>" -> parse_multipart_form
//      (server/multipart.h, the server's own reader) -> parse_ocr_form; every part it returns must
//      lie within the body;
//   2: a base64 payload -> decode_base64, checked against a plain reference decoder, then
//      encode_base64 -> decode_base64 round trip; and the same bytes as a data URI.
// A refused body is an ApiError 400; anything else escaping, a crash or a sanitizer report, or a
// broken promise (checked below) is a finding.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/base64.h"
#include "server/multipart.h"
#include "server/ocr_request.h"

namespace {

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "ocr_request_fuzz: %s\n", why);
  std::abort();
}

void check_request(const folio::OcrRequest& r) {
  if (r.files.empty()) fail("a parsed request has no file");
  if (r.max_tokens && *r.max_tokens < 1) fail("a parsed request has max_tokens < 1");
  for (const folio::UploadedFile& f : r.files) {
    if (f.name.empty()) fail("a parsed file has no name");
    if (f.type != "pdf" && f.type != "png" && f.type != "jpeg") fail("a parsed file has an unknown type");
    if (folio::sniff_file_type(f.bytes) != f.type) fail("a parsed file's type is not its content's");
  }
}

// Base64 decoded by the textbook bit accumulator: the standard alphabet, whitespace and '='
// skipped, trailing bits below a byte dropped. Independent of OpenSSL.
std::string reference_decode(std::string_view text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int n = 0;
  for (char c : text) {
    const size_t v = alphabet.find(c);
    if (v == std::string::npos) continue;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    n += 6;
    if (n >= 8) {
      n -= 8;
      out += static_cast<char>((bits >> n) & 0xFF);
    }
  }
  return out;
}

void fuzz_base64(std::string_view text) {
  try {
    const std::string bytes = folio::decode_base64(text, "fuzz");
    if (bytes.empty()) fail("decode_base64 accepted an empty payload");
    if (bytes != reference_decode(text)) fail("decode_base64 disagrees with the reference decoder");
    const std::string again = folio::decode_base64(folio::encode_base64(bytes), "fuzz");
    if (again != bytes) fail("encode_base64 -> decode_base64 does not round-trip");
  } catch (const folio::ApiError& e) {
    if (e.status != 400 || e.code != "invalid_base64") fail("decode_base64 refused with something but 400 invalid_base64");
  }
  try {
    const folio::DataUri d = folio::parse_data_uri(text, "fuzz");
    if (d.bytes.empty()) fail("parse_data_uri accepted an empty payload");
    if (d.media_type.find(';') != std::string::npos || d.media_type.find(',') != std::string::npos)
      fail("parse_data_uri's media type holds a separator");
  } catch (const folio::ApiError& e) {
    if (e.status != 400 || (e.code != "invalid_image_url" && e.code != "invalid_base64"))
      fail("parse_data_uri refused with something but 400 invalid_image_url / invalid_base64");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const int mode = data[0] % 3;
  try {
    if (mode == 0) {
      check_request(folio::parse_ocr_json(in.substr(1)));
    } else if (mode == 1) {
      if (size < 2) return 0;
      const std::string boundary = "folio" + std::to_string(data[1]);
      std::vector<folio::FormPart> parts;
      try {
        parts = folio::parse_multipart_form("multipart/form-data; boundary=" + boundary, in.substr(2));
      } catch (const folio::ApiError& e) {
        if (e.status != 400 || e.code != "invalid_multipart") fail("parse_multipart_form refused with something but 400 invalid_multipart");
        return -1;  // not a form: keep out of the corpus
      }
      size_t bytes = 0;
      for (const folio::FormPart& p : parts) bytes += p.content.size();
      if (bytes > size) fail("parse_multipart_form returned more bytes than the body holds");
      check_request(folio::parse_ocr_form(parts));
    } else {
      fuzz_base64(in.substr(1));
    }
  } catch (const folio::ApiError& e) {
    if (e.status != 400 || e.code.empty()) fail("a malformed body got an ApiError other than 400 with a code");
  }
  return 0;
}
