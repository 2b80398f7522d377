#include "runtime/ocr_sequence.h"

namespace folio {

SequenceRequest ocr_sequence_request(OcrPass pass, int64_t max_tokens) {
  SequenceRequest r;
  r.reference = std::move(pass.reference);
  const GenerationOptions& g = pass.generation;
  r.embed_token = g.embed_token;
  r.constrain = g.constrain;
  r.no_repeat_ngram = g.no_repeat_ngram;
  r.no_repeat_window = g.no_repeat_window;
  r.stop_at_eos = g.stop_at_eos;
  r.page_separator = g.page_separator;
  r.rolling = g.rolling;
  r.max_tokens = max_tokens;
  return r;
}

}  // namespace folio
