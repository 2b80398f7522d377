// Regex pre-tokenizers of Hugging Face tokenizer.json files, hand-written.
//
// tokenizer.json describes how text is cut into pieces before BPE with Oniguruma regexes over
// Unicode classes (\p{L}, \p{N}, ...), which std::regex cannot express. Instead of a regex engine
// we recognise the few regexes real byte-level BPE tokenizers ship and run a hand-written matcher
// for each that follows the regex's leftmost-first alternation and greedy backtracking exactly.
// A pattern we do not know is rejected by the loader rather than approximated.
//
// Supported patterns (the exact strings live in pretokenizer.cpp):
//  - Gpt2: the ByteLevel pre-tokenizer's own regex when "use_regex" is true,
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//  - Llama3: the Split regex of Llama-3 tokenizer.json files.
//  - DeepSeekV3Digits / DeepSeekV3Cjk / DeepSeekV3Main: the three Split regexes of the
//    DeepSeek-V3 tokenizer.json (also used by DeepSeek-OCR), applied in that order:
//      \p{N}{1,3}
//      [一-龥぀-ゟ゠-ヿ]+
//      [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//        ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//    (sources: deepseek-ai/DeepSeek-V3 tokenizer.json as quoted by several projects, and
//    llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM regex list, which is identical).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio {

enum class SplitPattern { Gpt2, Llama3, DeepSeekV3Digits, DeepSeekV3Cjk, DeepSeekV3Main };

// The pattern a tokenizer.json regex string (JSON-decoded) denotes, if it is one we implement.
// CR and LF may appear either literally or as the escapes \r \n.
std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex);

// The regex string of a pattern, in the form tokenizer.json files use (CR/LF literal).
std::string split_pattern_regex(SplitPattern pattern);

// Cuts text into pieces by running each pattern in turn over every piece the previous one left,
// with tokenizers' "Isolated" behaviour: every match is a piece and so is every gap between
// matches. Returns byte ranges [first, second) of `text`, in order, covering it exactly.
// With no patterns the whole text is one piece. Invalid UTF-8 bytes are kept, classed as Other.
std::vector<std::pair<size_t, size_t>> pre_tokenize(std::string_view text,
                                                    const std::vector<SplitPattern>& patterns);

}  // namespace folio
