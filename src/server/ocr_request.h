// OcrRequest: a POST /v1/ocr body, parsed and checked, from JSON or multipart/form-data.
//
// JSON: {"file": "<base64 or data URI>", "filename": "scan.pdf", "type": "pdf" | "png" | "jpeg",
//        "files": [{"file", "filename", "type"}, ...] (instead of "file"),
//        "pages": "1-3", "stream": false, "max_tokens": N, "model": "...", "page_images": false}
// multipart/form-data: every part with a filename (any field name) is a file, in order; the fields
// "pages", "stream" and "page_images" (true/false/1/0), "max_tokens" and "model" are read as text.
// page_images: each page's JSON also carries "image", the page as the model read it (a PNG data URI,
// at most kPageImageWidth pixels wide), for a client that shows pages beside their text.
// Files are recognised by content (PDF signature, PNG, JPEG); a declared type (JSON "type", or a
// part's Content-Type other than application/octet-stream) must agree with it. Unknown fields are
// ignored, as OpenAI-style clients send optional ones.
//
// Every malformed body (bad JSON, wrong types, bad base64, no file, an unsupported or mismatched
// type, max_tokens < 1) is an ApiError 400 naming the field.
#pragma once

#include "server/multipart.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace folio {

struct UploadedFile {
  std::string name;   // as the client named it (or "file-N"); used in messages and per-page "source"
  std::string type;   // recognised from the content: pdf | png | jpeg
  std::string bytes;
};

struct OcrRequest {
  std::string model;  // "" if not given
  std::vector<UploadedFile> files;
  std::string pages;  // page_range.h syntax over all files' pages; "" = all
  bool stream = false;
  std::optional<int64_t> max_tokens;  // per pass
  bool page_images = false;
};

OcrRequest parse_ocr_json(std::string_view body);
OcrRequest parse_ocr_form(const std::vector<FormPart>& parts);

// pdf | png | jpeg from the first bytes, "" for anything else.
std::string sniff_file_type(std::string_view bytes);

// Checks that `bytes` are a PDF, PNG or JPEG (and, when `declared` is not empty, the type the client
// declared: pdf, png, jpeg, jpg, application/pdf, image/png, image/jpeg); returns the type the bytes
// are. An image declared as the other image type is accepted as what it is; a PDF declared as an
// image or the reverse is not. ApiError 400 "unsupported_file_type" / "file_type_mismatch" naming
// `what`.
std::string check_file_type(std::string_view bytes, const std::string& declared, const std::string& what);

}  // namespace folio
