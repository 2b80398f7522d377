// Where the shipped OCR model (folio-mini-ocr) is found when the user names none.
//
// Order: $FOLIO_MODEL; <executable dir>/../models/folio-mini-ocr and <executable dir>/models/
// folio-mini-ocr (a build tree inside the checkout, an installed layout); the source tree folio was
// built from. The first directory holding a config.json wins; none: InvalidInput listing every
// place looked at and how to choose a model.
#pragma once

#include <string>

namespace folio {

std::string default_ocr_model_dir();

// A file or directory shipped in the repository (e.g. "data/heldout"), looked up like the model:
// next to the executable (../REL, REL), then in the source tree. InvalidInput listing the places.
std::string shipped_path(const std::string& relative);

}  // namespace folio
