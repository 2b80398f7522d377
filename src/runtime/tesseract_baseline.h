// The tesseract baseline of `folio bench accuracy`: Debian's tesseract-ocr reads the same rendered
// pages folio reads, so both CERs come from one measurement (ocr_accuracy.h).
//
// Promises: each page is written as a PNG into a private temporary directory and read by
// `tesseract PAGE stdout -l eng --psm 6` (one uniform block of text: our pages' layout) with
// OMP_THREAD_LIMIT set to `threads` (unset, its OpenMP may start more threads than the process's
// cores and run much slower: docs/measurements.md); the text of the pages is joined with the
// "<page>" marker. Throws Unsupported when tesseract is not
// installed, Io when it fails on a page.
#pragma once

#include <string>

#include "runtime/ocr_pages.h"

namespace folio {

bool tesseract_available();

// The text tesseract reads on every page of `pages`, pages joined by `page_marker`.
std::string tesseract_read(const OcrPages& pages, const std::string& page_marker, size_t threads);

}  // namespace folio
