// Byte-level BPE tokenizers loaded from Hugging Face tokenizer.json files (GPT-2, Llama-3,
// DeepSeek-V2/V3, DeepSeek-OCR, ...).
//
// Supported tokenizer.json subset; anything else is rejected with InvalidInput naming the
// construct, never silently approximated:
//  - model: "BPE" with a vocab object, merges as "a b" strings or ["a", "b"] pairs, optional
//    ignore_merges; no dropout, continuing_subword_prefix or end_of_word_suffix.
//  - normalizer: null or an empty Sequence.
//  - pre_tokenizer: ByteLevel (use_regex true -> the GPT-2 regex), or a Sequence of Split
//    pre-tokenizers (behavior Isolated, not inverted, regex one of those in pretokenizer.h)
//    ending in ByteLevel with use_regex false. add_prefix_space is honoured.
//  - decoder: null or ByteLevel.
//  - added_tokens: special or not, with lstrip / rstrip / single_word.
//  - post_processor: only read to learn the BOS token (a TemplateProcessing whose "single"
//    template starts with a SpecialToken); encode() never adds BOS/EOS.
//
// bos_id() / eos_id() come, in order of preference, from a tokenizer_config.json next to the file
// (bos_token, eos_token; add_bos_token false means no BOS), then the post_processor (BOS only),
// then well-known token names (<｜begin▁of▁sentence｜>, <s>, <|begin_of_text|> /
// <｜end▁of▁sentence｜>, </s>, <|end_of_text|>, <|endoftext|>).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/tokenizer.h"

namespace folio {

// Loads path (a tokenizer.json); reads tokenizer_config.json from the same directory if present.
// Throws Error(Io) if the file cannot be read, InvalidInput (naming the file) if it is malformed or
// uses an unsupported construct.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);

// Same from in-memory text; tokenizer_config_json may be empty. `source` names it in errors.
std::unique_ptr<Tokenizer> load_tokenizer_json_string(std::string_view tokenizer_json,
                                                      std::string_view tokenizer_config_json = {},
                                                      const std::string& source = "tokenizer.json");

// A valid DeepSeek-style tokenizer.json with exactly vocab_size ids, for synthetic test models:
// the special tokens at their given ids, the 256 byte tokens and a few hundred merges learnt
// greedily from a built-in English sample at the lowest free ids, then seeded random filler
// tokens for every remaining id. Its pre_tokenizer is the DeepSeek-V3 Sequence, so loading it
// takes the real code path. Throws InvalidInput if the special ids are out of range or repeated
// or vocab_size leaves no room for the byte tokens.
std::string make_synthetic_bpe_tokenizer_json(int32_t vocab_size,
                                              const std::vector<std::pair<std::string, int32_t>>& special_tokens,
                                              uint64_t seed);

// make_synthetic_bpe_tokenizer_json written to path (Error(Io) if it cannot be written).
void write_synthetic_bpe_tokenizer_json(const std::string& path, int32_t vocab_size,
                                        const std::vector<std::pair<std::string, int32_t>>& special_tokens,
                                        uint64_t seed);

}  // namespace folio
