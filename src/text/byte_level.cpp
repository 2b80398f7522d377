#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace folio {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 512> to_byte{};  // every mapped code point is below U+0200

  Tables() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      to_char[b] = c;
      to_byte[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_level_char(uint8_t b) { return tables().to_char[b]; }

std::optional<uint8_t> byte_level_byte(char32_t cp) {
  if (cp >= 512) return std::nullopt;
  const int16_t b = tables().to_byte[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_level_char(static_cast<uint8_t>(c)));
  return out;
}

std::string byte_level_decode(std::string_view mapped) {
  const DecodedText d = decode_utf8(mapped);
  std::string out;
  out.reserve(mapped.size());
  for (size_t i = 0; i < d.cps.size(); ++i) {
    if (auto b = byte_level_byte(d.cps[i])) {
      out.push_back(static_cast<char>(*b));
    } else {
      out.append(mapped.substr(d.offsets[i], d.offsets[i + 1] - d.offsets[i]));
    }
  }
  return out;
}

}  // namespace folio
