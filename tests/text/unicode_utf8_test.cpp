#include <gtest/gtest.h>

#include <set>

#include "text/byte_level.h"
#include "text/unicode_class.h"
#include "text/utf8.h"

namespace folio {
namespace {

TEST(Utf8, DecodesValidTextWithOffsets) {
  const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";  // a é 中 😀
  const DecodedText d = decode_utf8(s);
  ASSERT_EQ(d.cps.size(), 4u);
  EXPECT_EQ(d.cps[0], U'a');
  EXPECT_EQ(d.cps[1], U'é');
  EXPECT_EQ(d.cps[2], U'中');
  EXPECT_EQ(d.cps[3], U'😀');
  EXPECT_EQ(d.offsets, (std::vector<size_t>{0, 1, 3, 6, 10}));
  std::string back;
  for (char32_t c : d.cps) append_utf8(back, c);
  EXPECT_EQ(back, s);
}

TEST(Utf8, InvalidBytesBecomeMarkersOneByteEach) {
  // Stray continuation, truncated 3-byte sequence followed by ASCII, overlong, surrogate.
  const std::string s = "\x80" "\xE4\xB8" "A" "\xC0\xAF" "\xED\xA0\x80";
  const DecodedText d = decode_utf8(s);
  ASSERT_EQ(d.cps.size(), 9u);  // every byte is its own entry
  EXPECT_EQ(d.cps[0], kInvalidUtf8Base + 0x80);
  EXPECT_EQ(d.cps[1], kInvalidUtf8Base + 0xE4);
  EXPECT_EQ(d.cps[2], kInvalidUtf8Base + 0xB8);
  EXPECT_EQ(d.cps[3], U'A');
  EXPECT_EQ(d.cps[4], kInvalidUtf8Base + 0xC0);
  EXPECT_EQ(d.cps[6], kInvalidUtf8Base + 0xED);
  EXPECT_EQ(d.offsets.back(), s.size());
}

TEST(Utf8, CompletePrefixHoldsBackOnlyUnfinishedSequences) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xB8"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98\x80"), 4u);
  // Bytes that can never complete are not held back.
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);  // E0 80 is overlong already
  EXPECT_EQ(utf8_complete_prefix("a\xE4\xB8" "A"), 4u);
}

TEST(UnicodeClass, MatchesGeneralCategories) {
  EXPECT_EQ(unicode_class(U'A'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(U'é'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(U'中'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(U'カ'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(U'한'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(U'ж'), UnicodeClass::Letter);
  EXPECT_EQ(unicode_class(0x0301), UnicodeClass::Mark);
  EXPECT_EQ(unicode_class(U'7'), UnicodeClass::Number);
  EXPECT_EQ(unicode_class(U'²'), UnicodeClass::Number);
  EXPECT_EQ(unicode_class(U'Ⅻ'), UnicodeClass::Number);
  EXPECT_EQ(unicode_class(U'.'), UnicodeClass::Punct);
  EXPECT_EQ(unicode_class(U'，'), UnicodeClass::Punct);
  EXPECT_EQ(unicode_class(U'$'), UnicodeClass::Symbol);
  EXPECT_EQ(unicode_class(U'+'), UnicodeClass::Symbol);
  EXPECT_EQ(unicode_class(U'😀'), UnicodeClass::Symbol);
  EXPECT_EQ(unicode_class(U' '), UnicodeClass::Separator);
  EXPECT_EQ(unicode_class(0x3000), UnicodeClass::Separator);
  EXPECT_EQ(unicode_class(U'\n'), UnicodeClass::Other);
  EXPECT_EQ(unicode_class(0xE000), UnicodeClass::Other);  // private use
  EXPECT_EQ(unicode_class(kInvalidUtf8Base + 0x80), UnicodeClass::Other);
  // ASCII letters are exactly the ASCII Letter class (the fast path must agree with the table).
  for (char32_t c = 0; c < 0x80; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    EXPECT_EQ(unicode_class(c) == UnicodeClass::Letter, alpha) << uint32_t(c);
  }
}

TEST(UnicodeClass, WhitespaceIsTheWhiteSpaceProperty) {
  for (char32_t c : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000})
    EXPECT_TRUE(unicode_is_whitespace(c)) << std::hex << uint32_t(c);
  for (char32_t c : {0x00, 0x1C, 0x200B, 0x41, 0x2581, 0x200D}) EXPECT_FALSE(unicode_is_whitespace(c)) << std::hex << uint32_t(c);
}

TEST(ByteLevel, IsABijectionWithGpt2Anchors) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_level_char(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second);
    EXPECT_EQ(byte_level_byte(c), static_cast<uint8_t>(b));
  }
  EXPECT_EQ(byte_level_char(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_level_char('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_level_char('A'), U'A');
  EXPECT_EQ(byte_level_char(0xE9), 0xE9u);
  EXPECT_EQ(byte_level_char(0xAD), 0x143u);
  EXPECT_FALSE(byte_level_byte(U'中').has_value());
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  EXPECT_EQ(byte_level_encode(" hi\n"), "\xC4\xA0hi\xC4\x8A");
}

}  // namespace
}  // namespace folio
