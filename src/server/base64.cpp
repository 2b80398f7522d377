#include "server/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include "server/api_error.h"

namespace folio {

namespace {

bool in_alphabet(unsigned char c) { return std::isalnum(c) || c == '+' || c == '/'; }

}  // namespace

std::string decode_base64(std::string_view text, const std::string& what) {
  // Checked here rather than left to OpenSSL, whose decoder accepts some malformed input (e.g. data
  // after padding in some positions) and reports every failure alike.
  std::string clean;
  clean.reserve(text.size());
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) continue;
    if (c == '=') {
      ++padding;
    } else if (!in_alphabet(c)) {
      throw bad_request("invalid_base64", "'" + what + "' is not valid base64: character " + std::to_string(i) + " is not in the alphabet");
    } else if (padding > 0) {
      throw bad_request("invalid_base64", "'" + what + "' is not valid base64: data after '=' padding");
    }
    if (padding == 0) clean += static_cast<char>(c);
  }
  if (clean.empty()) throw bad_request("invalid_base64", "'" + what + "' is empty");
  if (padding > 2 || clean.size() % 4 == 1 || (padding > 0 && (clean.size() + padding) % 4 != 0))
    throw bad_request("invalid_base64", "'" + what + "' is not valid base64: its length is not a whole number of bytes");
  const size_t rem = clean.size() % 4;
  if (rem) clean.append(4 - rem, '=');
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) throw bad_request("invalid_base64", "'" + what + "' is not valid base64");
  // EVP_DecodeBlock counts padded bytes as zeros: drop them.
  const size_t pad = rem ? 4 - rem : padding;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string encode_base64(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

DataUri parse_data_uri(std::string_view uri, const std::string& what) {
  if (uri.rfind("data:", 0) != 0) {
    const std::string head(uri.substr(0, std::min<size_t>(uri.size(), 16)));
    throw bad_request("invalid_image_url", "'" + what + "' must be a data URI (data:image/png;base64,...); the server does not fetch URLs, got '" +
                                               head + (uri.size() > 16 ? "...'" : "'"));
  }
  const size_t comma = uri.find(',');
  if (comma == std::string_view::npos) throw bad_request("invalid_image_url", "'" + what + "' is a data URI without ',' before its payload");
  const std::string_view meta = uri.substr(5, comma - 5);
  const size_t b64 = meta.rfind(";base64");
  if (b64 == std::string_view::npos || b64 + 7 != meta.size())
    throw bad_request("invalid_image_url", "'" + what + "' must be a base64 data URI (data:<type>;base64,<payload>)");
  DataUri d;
  d.media_type = std::string(meta.substr(0, std::min(meta.find(';'), meta.size())));
  d.bytes = decode_base64(uri.substr(comma + 1), what);
  return d;
}

}  // namespace folio
