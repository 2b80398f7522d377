#include "server/ocr_request.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "server/base64.h"
#include "server/json_body.h"

namespace folio {

namespace {

using nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The canonical type a client's declaration names, "" if none of ours.
std::string declared_type(const std::string& declared) {
  const std::string d = lower(declared);
  if (d == "pdf" || d == "application/pdf") return "pdf";
  if (d == "png" || d == "image/png") return "png";
  if (d == "jpeg" || d == "jpg" || d == "image/jpeg" || d == "image/jpg") return "jpeg";
  return "";
}

int64_t max_tokens_value(int64_t v) {
  if (v < 1) throw bad_request("invalid_value", "'max_tokens' must be at least 1, got " + std::to_string(v));
  return v;
}

// The file described by f's "file", "filename" and "type"; `where` prefixes the field names in
// messages ("" for the body itself, "files[2]." in a list).
UploadedFile json_file(const json& f, const std::string& where, size_t index) {
  if (!f.is_object()) throw bad_request("invalid_type", "'" + where.substr(0, where.size() - 1) + "' must be an object with 'file' (base64)");
  const json* data = json_field(f, "file");
  if (!data) throw bad_request("missing_field", "'" + where + "file' is required (the file's bytes in base64)");
  if (!data->is_string()) throw bad_request("invalid_type", "'" + where + "file' must be a base64 string");
  UploadedFile u;
  u.name = "file-" + std::to_string(index + 1);
  if (const json* n = json_field(f, "filename")) {
    if (!n->is_string()) throw bad_request("invalid_type", "'" + where + "filename' must be a string");
    if (!n->get<std::string>().empty()) u.name = n->get<std::string>();
  }
  std::string declared;
  if (const json* t = json_field(f, "type")) {
    if (!t->is_string()) throw bad_request("invalid_type", "'" + where + "type' must be a string");
    declared = t->get<std::string>();
  }
  const std::string& text = data->get_ref<const std::string&>();
  if (text.rfind("data:", 0) == 0) {
    DataUri d = parse_data_uri(text, where + "file");
    if (declared.empty()) declared = d.media_type;
    u.bytes = std::move(d.bytes);
  } else {
    u.bytes = decode_base64(text, where + "file");
  }
  u.type = check_file_type(u.bytes, declared, u.name);
  return u;
}

bool parse_bool_text(const std::string& v, const char* name) {
  const std::string s = lower(v);
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0" || s.empty()) return false;
  throw bad_request("invalid_value", std::string("'") + name + "' must be true or false, got '" + v + "'");
}

}  // namespace

std::string sniff_file_type(std::string_view b) {
  if (b.substr(0, std::min<size_t>(b.size(), 1024)).find("%PDF-") != std::string_view::npos) return "pdf";
  if (b.size() >= 8 && b.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return "png";
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xFF && static_cast<unsigned char>(b[1]) == 0xD8 &&
      static_cast<unsigned char>(b[2]) == 0xFF)
    return "jpeg";
  return "";
}

std::string check_file_type(std::string_view bytes, const std::string& declared, const std::string& what) {
  std::string want;
  if (!declared.empty()) {
    want = declared_type(declared);
    if (want.empty())
      throw bad_request("unsupported_file_type", what + ": type '" + declared + "' is not supported (PDF, PNG or JPEG)");
  }
  const std::string got = sniff_file_type(bytes);
  if (got.empty()) throw bad_request("unsupported_file_type", what + ": not a PDF, PNG or JPEG file (unrecognised content)");
  // One image type labelled as the other (OpenAI's own example sends a PNG as data:image/jpeg) is
  // read as what it is; a document labelled as an image, or the reverse, is a wrong file.
  const bool both_images = want != "pdf" && got != "pdf";
  if (!want.empty() && want != got && !both_images)
    throw bad_request("file_type_mismatch", what + ": declared as " + want + " but the content is " + got);
  return got;
}

OcrRequest parse_ocr_json(std::string_view body) {
  const json j = parse_json_object(body);
  OcrRequest r;
  r.model = json_model_field(j);
  const json* files = json_field(j, "files");
  if (json_field(j, "file") && files) throw bad_request("invalid_value", "give either 'file' or 'files', not both");
  if (json_field(j, "file")) {
    r.files.push_back(json_file(j, "", 0));
  } else if (files) {
    if (!files->is_array() || files->empty()) throw bad_request("invalid_value", "'files' must be a non-empty list");
    for (size_t i = 0; i < files->size(); ++i) r.files.push_back(json_file((*files)[i], "files[" + std::to_string(i) + "].", i));
  } else {
    throw bad_request("missing_field", "'file' (base64) or 'files' is required");
  }
  if (const json* p = json_field(j, "pages")) {
    if (p->is_number_integer()) r.pages = std::to_string(p->get<int64_t>());
    else if (p->is_string()) r.pages = p->get<std::string>();
    else throw bad_request("invalid_type", "'pages' must be a string such as \"1-3\"");
  }
  if (const json* s = json_field(j, "stream")) {
    if (!s->is_boolean()) throw bad_request("invalid_type", "'stream' must be true or false");
    r.stream = s->get<bool>();
  }
  if (const json* s = json_field(j, "page_images")) {
    if (!s->is_boolean()) throw bad_request("invalid_type", "'page_images' must be true or false");
    r.page_images = s->get<bool>();
  }
  if (const json* m = json_field(j, "max_tokens")) {
    if (!m->is_number_integer() || (m->is_number_unsigned() && m->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
      throw bad_request("invalid_type", "'max_tokens' must be an integer");
    r.max_tokens = max_tokens_value(m->get<int64_t>());
  }
  return r;
}

OcrRequest parse_ocr_form(const std::vector<FormPart>& parts) {
  OcrRequest r;
  for (const FormPart& p : parts) {
    if (!p.filename.empty()) {
      UploadedFile u;
      u.name = p.filename;
      u.bytes = p.content;
      const std::string ct = lower(p.content_type);
      const std::string declared = ct.empty() || ct == "application/octet-stream" ? std::string() : p.content_type;
      u.type = check_file_type(u.bytes, declared, u.name);
      r.files.push_back(std::move(u));
    } else if (p.name == "pages") {
      r.pages = p.content;
    } else if (p.name == "stream") {
      r.stream = parse_bool_text(p.content, "stream");
    } else if (p.name == "page_images") {
      r.page_images = parse_bool_text(p.content, "page_images");
    } else if (p.name == "model") {
      r.model = p.content;
    } else if (p.name == "max_tokens") {
      int64_t v = 0;
      size_t used = 0;
      try {
        v = std::stoll(p.content, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != p.content.size()) throw bad_request("invalid_type", "'max_tokens' must be an integer, got '" + p.content + "'");
      r.max_tokens = max_tokens_value(v);
    }
  }
  if (r.files.empty()) throw bad_request("missing_field", "no file in the form: send the document as a file part (e.g. -F file=@scan.pdf)");
  return r;
}

}  // namespace folio
