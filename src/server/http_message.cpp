#include "server/http_message.h"

#include <algorithm>
#include <cctype>

namespace folio {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string first_value(const HttpHeaders& h, const std::string& name) {
  const auto it = h.find(name);
  return it == h.end() ? std::string() : it->second;
}

}  // namespace

bool HeaderNameLess::operator()(const std::string& a, const std::string& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) { return lower(x) < lower(y); });
}

std::string HttpRequest::get_header_value(const std::string& name) const { return first_value(headers, name); }

bool HttpRequest::is_multipart_form_data() const {
  std::string type = get_header_value("Content-Type");
  std::transform(type.begin(), type.end(), type.begin(), lower);
  return type.rfind("multipart/form-data", 0) == 0;
}

std::string HttpResponse::get_header_value(const std::string& name) const { return first_value(headers, name); }

void HttpResponse::set_header(const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
}

void HttpResponse::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  set_header("Content-Type", content_type);
}

void HttpResponse::set_chunked_content_provider(const std::string& content_type, ContentProvider p, ContentReleaser r) {
  set_header("Content-Type", content_type);
  provider = std::move(p);
  releaser = std::move(r);
}

}  // namespace folio
