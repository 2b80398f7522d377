#include "runtime/ocr_sequence.h"

namespace folio {

SequenceRequest ocr_sequence_request(OcrPass pass, int64_t max_tokens) {
  SequenceRequest r;
  r.reference = std::move(pass.reference);
  static_cast<DecodingOptions&>(r) = pass.generation;
  r.max_tokens = max_tokens;
  return r;
}

}  // namespace folio
