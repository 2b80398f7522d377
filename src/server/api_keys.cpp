#include "server/api_keys.h"

#include <cctype>
#include <fstream>

#include "core/error.h"

namespace folio {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length whatever the contents; a length mismatch is folded into the result.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool ApiKeys::accepts(std::string_view presented) const {
  bool ok = false;
  for (const std::string& k : keys_) ok |= constant_time_equal(k, presented);  // no early exit
  return ok;
}

ApiKeys ApiKeys::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_invalid("server.api_keys_file: cannot read " + path);
  std::vector<std::string> keys;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    size_t a = 0, b = line.size();
    while (a < b && std::isspace(static_cast<unsigned char>(line[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(line[b - 1]))) --b;
    std::string key = line.substr(a, b - a);
    if (key.empty() || key[0] == '#') continue;
    for (char c : key)
      if (std::isspace(static_cast<unsigned char>(c)))
        throw_invalid("server.api_keys_file: " + path + " line " + std::to_string(lineno) + ": a key must not contain whitespace");
    if (key.size() > 512) throw_invalid("server.api_keys_file: " + path + " line " + std::to_string(lineno) + ": key longer than 512 bytes");
    keys.push_back(std::move(key));
  }
  if (keys.empty()) throw_invalid("server.api_keys_file: " + path + " holds no key (one per line; '#' starts a comment)");
  return ApiKeys(std::move(keys));
}

std::string bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || authorization[kScheme.size()] != ' ') return "";
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return "";
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return std::string(token);
}

}  // namespace folio
