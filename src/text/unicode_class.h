// Unicode general-category classes and White_Space, as the pre-tokenizer regexes see them.
//
// Hugging Face tokenizer.json pre-tokenizers are written as regexes over \p{L}, \p{N}, \p{P}, ...
// std::regex knows none of these, so the splitters in pretokenizer.cpp ask this classifier instead.
// Only the major class (first letter of the general category) matters to those regexes.
#pragma once

#include <cstdint>

namespace folio {

enum class UnicodeClass : uint8_t {
  Letter,     // \p{L}: Lu Ll Lt Lm Lo
  Mark,       // \p{M}: Mn Mc Me
  Number,     // \p{N}: Nd Nl No
  Punct,      // \p{P}: Pc Pd Ps Pe Pi Pf Po
  Symbol,     // \p{S}: Sm Sc Sk So
  Separator,  // \p{Z}: Zs Zl Zp
  Other,      // \p{C}: controls, format, surrogates, private use, unassigned; also invalid UTF-8 bytes
};

// Code points above U+10FFFF (the UTF-8 decoder's marker for an invalid byte) are Other.
UnicodeClass unicode_class(char32_t cp);

// The White_Space property, which is what \s means in the Oniguruma regexes tokenizers use.
bool unicode_is_whitespace(char32_t cp);

}  // namespace folio
