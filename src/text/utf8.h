// UTF-8 helpers for the tokenizers: decoding that never fails, encoding, and finding where a
// byte stream stops being complete UTF-8 (what a streaming detokenizer must hold back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// Marker code point for a byte that is not part of a valid UTF-8 sequence. It lies above
// U+10FFFF so it can never collide with a real character; the byte itself is kInvalidUtf8Base + b.
inline constexpr char32_t kInvalidUtf8Base = 0x110000;

struct DecodedText {
  std::vector<char32_t> cps;     // one entry per character (or per invalid byte)
  std::vector<size_t> offsets;   // byte offset of cps[i]; offsets[cps.size()] == text.size()
};

// Decodes text, mapping each invalid byte (bad lead, truncated or overlong sequence, surrogate,
// > U+10FFFF) to kInvalidUtf8Base + byte, so tokenizers can still round-trip arbitrary bytes.
DecodedText decode_utf8(std::string_view text);

// Appends the UTF-8 encoding of cp (cp must be a valid scalar value).
void append_utf8(std::string& out, char32_t cp);

// Length of the longest prefix of bytes that does not end inside an incomplete-but-so-far-valid
// multi-byte sequence. Bytes that can never become valid UTF-8 are not held back.
size_t utf8_complete_prefix(std::string_view bytes);

}  // namespace folio
