// SentencePiece-style BPE by scores, as used by GGUF "llama" vocabularies (LLaMA 1/2, Mistral...).
//
// Encoding (llama.cpp's SPM algorithm): control and user-defined tokens written literally in the
// text are matched first (longest first) and become their ids. Each remaining fragment gets a
// leading space if add_space_prefix is set and it starts the text or follows such a token (as the
// reference tokenizer does), spaces become U+2581 "▁", and the fragment is split into UTF-8
// characters. Then the adjacent pair whose concatenation is a normal or user-defined token with
// the highest score is merged, leftmost first on ties, until no pair forms a token. A symbol that
// is not a token falls back to its bytes as <0xXX> byte tokens, or to unk if those are missing.
//
// Decoding maps "▁" back to a space and byte tokens back to their byte, and drops the one space
// that encoding added (at the start of the text and right after a control / user-defined token),
// so decode(encode(text)) == text whenever every character has a token or byte token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace folio {

struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;    // empty means all 0
  std::vector<int32_t> types;   // empty means all normal. 1 normal, 2 unknown, 3 control,
                                // 4 user-defined, 5 unused, 6 byte
  int32_t bos = 1, eos = 2, unk = 0;  // -1: none
  bool add_space_prefix = true;
};

// Throws InvalidInput if the vocabulary is empty, the array lengths disagree, a type is unknown
// or bos / eos / unk is out of range.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(SpmVocab v);

}  // namespace folio
