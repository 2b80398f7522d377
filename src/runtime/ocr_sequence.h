// An OCR pass as a scheduler request: the pass's reference and the model's decoding recipe
// (embed_token hook, n-gram guard, EOS, page separator, rolling pages), so that the scheduler
// decodes what run_ocr's Generator decodes for the same pass. The caller sets the callbacks,
// deadline and anything it serves differently (e.g. where rolling pages come from).
#pragma once

#include <cstdint>

#include "runtime/ocr_model.h"
#include "runtime/scheduler.h"

namespace folio {

SequenceRequest ocr_sequence_request(OcrPass pass, int64_t max_tokens);

}  // namespace folio
