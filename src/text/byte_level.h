// GPT-2's byte-to-unicode mapping ("ByteLevel" in tokenizer.json).
//
// Byte-level BPE vocabularies store tokens as strings in which every byte is replaced by one
// printable code point: the 188 printable Latin-1 bytes stand for themselves and the other 68
// (controls, space, 0x7F-0xA0, 0xAD) become U+0100.. in byte order, so " hello" is "Ġhello".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace folio {

// The code point that stands for byte b.
char32_t byte_level_char(uint8_t b);

// The byte a code point stands for, or nullopt if it is not one of the 256 mapped characters.
std::optional<uint8_t> byte_level_byte(char32_t cp);

// Raw bytes -> mapped string (UTF-8). Never fails.
std::string byte_level_encode(std::string_view bytes);

// Mapped string -> raw bytes. Characters outside the mapping are kept as their UTF-8 bytes.
std::string byte_level_decode(std::string_view mapped);

}  // namespace folio
