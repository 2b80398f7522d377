// How many of a document's passes `folio ocr` decodes side by side when the user does not say.
//
// A decoder step reads the weights once for all the passes in flight, so more of them decode faster
// (docs/measurements.md, "Passes side by side"), at the cost of all their KV at once. The count is
// the smallest of: the document's passes; 4, or 8 where the products of several activation rows
// run on AMX int8 tiles (kernels::int8_amx_active(): there 8 decode ~1.25x faster than 4,
// elsewhere 2%); and what `memory_bytes` holds of the largest passes' KV (ocr_pass_kv_bound), so
// that a document of long passes on a small machine does not take all its memory in KV. One pass
// at a time under a KV budget or offload (memory is what the user is saving), when streaming (the
// first text would wait for every pass's prefill), or when rolling (one pass).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "runtime/ocr_model.h"
#include "runtime/ocr_pages.h"
#include "runtime/ocr_pipeline.h"

namespace folio {

// At most the KV bytes a pass of pages [first, first + count) holds under opt (its layout and
// policy): KVFootprint's worst case (what admission reserves) for a reference of its image tokens
// and a prompt's worth more, and its output as the pipeline bounds it. An upper bound, not the
// pool's count: the pool's own counters say what a run held (kv_bytes_peak).
size_t ocr_pass_kv_bound(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, size_t first, size_t count);

// The count described above for the passes plan_ocr_passes makes of pages; at least 1.
size_t automatic_passes_in_flight(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, bool stream,
                                  size_t memory_bytes);

}  // namespace folio
