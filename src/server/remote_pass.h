// The payload of a prepared OCR pass in the remote reference tier (server/remote_reference_tier.h):
// the rows of its embedding parts (the pages the encoder produced), in order, with their token ids.
//
// A pass qualifies when all its model-specific state is in those rows: no text writer, no model
// state, not rolling (folio-mini-ocr 2 keeps recognizer readings beside its rows; its encoder is
// cheap anyway). fill_pass_rows() puts stored rows into a freshly prepared, not yet produced pass
// only if the stored parts match it exactly (count, ids, widths), and leaves the pass untouched
// otherwise, so a stale or foreign payload means encoding as usual, never a wrong reference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/ocr_model.h"

namespace folio {

bool remote_pass_eligible(const OcrPass& pass);

// The rows of `pass`'s embedding parts (produced or not: each part's producer runs once here).
std::string encode_pass_rows(const OcrPass& pass, int64_t hidden);

// Replaces the embedding parts of `pass` by the payload's rows, keyed as produce_keyed keys them;
// false (pass unchanged) when the payload does not describe this pass.
bool fill_pass_rows(OcrPass& pass, std::string_view payload, int64_t hidden);

}  // namespace folio
