// Where the shipped OCR model (folio-mini-ocr 3, kDefaultOcrModel) is found when the user names none.
//
// Order: $FOLIO_MODEL; <executable dir>/../models/folio-mini-ocr-3 and <executable dir>/models/
// folio-mini-ocr-3 (a build tree inside the checkout, an installed layout); the source tree folio was
// built from. The first directory holding a config.json wins; none: InvalidInput listing every
// place looked at and how to choose a model.
#pragma once

#include <string>

namespace folio {

// The default model, relative to the repository (v1, models/folio-mini-ocr, reads only its grid pages
// and stays for the engine's tests and the held-out grid sets).
inline constexpr const char* kDefaultOcrModel = "models/folio-mini-ocr-3";

std::string default_ocr_model_dir();

// A file or directory shipped in the repository (e.g. "data/heldout"), looked up like the model:
// next to the executable (../REL, REL), then in the source tree. InvalidInput listing the places.
std::string shipped_path(const std::string& relative);

}  // namespace folio
