#include "runtime/ocr_passes_in_flight.h"

#include <algorithm>
#include <functional>

#include "kernels/cpu/cpu_features.h"
#include "kv/block_pool.h"
#include "kv/kv_footprint.h"
#include "kv/sequence_kv.h"

namespace folio {

namespace {

// The most passes side by side without a memory limit: see the header.
size_t most_passes_in_flight() { return kernels::int8_amx_active() ? 8 : 4; }

}  // namespace

size_t ocr_pass_kv_bound(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, size_t first, size_t count) {
  constexpr int64_t kPromptTokens = 64;  // the prompt's text around the pages, generously
  Decoder& dec = model.decoder();
  const KVBlockPool layout(opt.kv_types ? dec.kv_layout(*opt.kv_types) : dec.kv_layout(opt.kv_dtype), 0);
  int64_t reference = kPromptTokens;
  for (size_t i = first; i < first + count; ++i) reference += model.image_tokens(pages, i, opt.mode);
  // Tokens generated and stored (as the pipeline bounds a pass's output), within the context.
  const int64_t max_tokens = opt.max_tokens > 0 ? opt.max_tokens : model.max_output_tokens(count);
  const int64_t generated = std::max<int64_t>(0, std::min(max_tokens, dec.config().max_positions - reference));
  // The pass's reference is several parts (prompt pieces, pages), each its own segment: whatever
  // the split, the segments closed so far and the one filling (whole blocks) hold no more than the
  // rows and one open block, which segments {reference, 1} reach.
  const int64_t segments[] = {reference, 1};
  return KVFootprint::worst_case_bytes(layout, opt.policy, kDefaultBlockTokens, segments, generated);
}

size_t automatic_passes_in_flight(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, bool stream,
                                  size_t memory_bytes) {
  if (opt.kv_budget > 0 || !opt.kv_offload_dir.empty() || stream || opt.policy.rolls()) return 1;
  const std::vector<std::pair<size_t, size_t>> passes = plan_ocr_passes(model, pages, opt);
  std::vector<size_t> bounds;
  for (const auto& [first, count] : passes) bounds.push_back(ocr_pass_kv_bound(model, pages, opt, first, count));
  std::sort(bounds.begin(), bounds.end(), std::greater<>());
  const size_t most = std::min(passes.size(), most_passes_in_flight());
  size_t n = 1, held = bounds.empty() ? 0 : bounds[0];
  while (n < most && held + bounds[n] <= memory_bytes) held += bounds[n++];
  return n;
}

}  // namespace folio
