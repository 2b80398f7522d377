// Tokenizer: text <-> token ids, whatever the vocabulary format behind it.
//
// Implementations: byte-level BPE from a Hugging Face tokenizer.json (bpe_tokenizer.h) and the
// llama / SentencePiece score-based BPE of GGUF "llama" vocabularies (sentencepiece_tokenizer.h).
// Tokenizers are immutable after construction, so one instance may serve many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // Token ids of text. Special and added tokens written literally in the text (e.g. "<image>",
  // "<｜begin▁of▁sentence｜>") are matched first, longest first, and become their ids. No BOS or
  // EOS is added: the caller decides (see bos_id()). Invalid UTF-8 is encoded byte for byte.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;

  // Text of ids: the concatenation of their bytes, special tokens included verbatim (filter ids
  // first to drop them), less any format-specific artefact such as SentencePiece's prefix space.
  // The result can contain invalid UTF-8 if ids end or break inside a character.
  // Throws InvalidInput for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

  // Raw bytes of one token, possibly a partial UTF-8 sequence; "" for an id the vocabulary leaves
  // unassigned. Throws InvalidInput for an id outside [0, vocab_size()).
  virtual std::string token_bytes(int32_t id) const = 0;

  // One more than the largest id, so every id the model's output layer can produce is below it.
  virtual int32_t vocab_size() const = 0;

  // Id of the token whose text is `piece`, in the same raw form token_bytes() returns
  // (e.g. "<td>", " the"); nullopt if no single token has it.
  virtual std::optional<int32_t> token_to_id(std::string_view piece) const = 0;

  // The beginning-of-sequence token the model expects first, if it uses one.
  virtual std::optional<int32_t> bos_id() const = 0;
  // The token that ends generation, if known.
  virtual std::optional<int32_t> eos_id() const = 0;

  // Whether id is markup for the model rather than text (SentencePiece control tokens such as
  // <s> and </s>; tokenizer.json added tokens marked "special"): what a program printing generated
  // text leaves out, as llama.cpp does. Throws InvalidInput for an id outside [0, vocab_size()).
  virtual bool is_control(int32_t id) const = 0;
};

// Turns a stream of generated ids into text pieces that are complete UTF-8, for printing tokens
// as they arrive: a character split over several byte tokens is held back until it is whole.
// The concatenation of every push() plus flush() equals tokenizer.decode(all ids), or, given
// `context` (ids the text continues, e.g. the prompt's last token), the text decode(context + ids)
// adds after decode(context): then a first word keeps the space a start-of-text rule would drop
// (sentencepiece's " named" after "boy", not "named").
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, std::vector<int32_t> context = {});

  // Adds one id; returns the text that became complete (possibly "").
  std::string push(int32_t id);

  // Returns whatever is still held back (an unfinished UTF-8 sequence, as raw bytes) and resets.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  // Only ids from window_start_ are decoded each time; everything before it has been emitted.
  // Decoding a window rather than single tokens keeps context-dependent rules (a leading space
  // dropped only at the start) identical to decode() of the whole sequence.
  std::vector<int32_t> window_;
  size_t emitted_ = 0;  // bytes of decode(window_) already returned
};

}  // namespace folio
