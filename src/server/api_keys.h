// ApiKeys: the Bearer tokens the server accepts, read from a file.
//
// File format: one key per line; blank lines and lines starting with '#' are ignored; surrounding
// whitespace is trimmed. A presented key is compared with every accepted key in time that does not
// depend on where (or whether) they differ, so response timing does not leak key contents.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace folio {

// The credentials of an Authorization header "Bearer <token>": the scheme matched without regard to
// case (RFC 7235: "bearer" and "BEARER" are the same scheme), spaces around the token dropped.
// Empty when the header is missing, names another scheme, or holds no token.
std::string bearer_token(std::string_view authorization);

class ApiKeys {
 public:
  ApiKeys() = default;  // no keys: authentication off
  // Throws Error(InvalidInput) naming server.api_keys_file if the file cannot be read, holds no key,
  // or holds a key with whitespace inside or over 512 bytes.
  static ApiKeys load(const std::string& path);
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  bool enabled() const { return !keys_.empty(); }
  bool accepts(std::string_view presented) const;
  size_t size() const { return keys_.size(); }

 private:
  std::vector<std::string> keys_;
};

// Constant-time (in the contents) equality of two byte strings.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace folio
