// The tokenizer half of a GGUF file: llama.cpp's "tokenizer.ggml.*" metadata, read into a folio
// Tokenizer and written from a Hugging Face tokenizer.json.
//
// Read: a SentencePiece vocabulary ("llama") or a byte-level BPE ("gpt2") whose pre-tokenizer is
// one llama.cpp names in "tokenizer.ggml.pre" (default, gpt-2, deepseek-v3). Written: byte-level
// BPE tokenizer.json files with one of those pre-tokenizers, as llama.cpp's converter writes them
// (token list padded to the model's vocabulary with "[PADi]" entries of type UNUSED).
// Failures throw Error naming the file and the unsupported model or pre-tokenizer.
#pragma once

#include <cstdint>
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "io/gguf.h"
#include "text/tokenizer.h"

namespace folio {

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g);

// Sets tokenizer.ggml.{model, pre, tokens, token_type, merges, bos_token_id, eos_token_id} on `w`.
// vocab_size >= the tokenizer's largest id + 1 (the embedding's rows). `source` names the
// tokenizer.json in messages.
void write_gguf_vocab(const nlohmann::json& tokenizer_json, int64_t vocab_size, int32_t bos, int32_t eos,
                      const std::string& source, GgufWriter& w);

}  // namespace folio
