#include "runtime/ocr_passes_in_flight.h"

#include <algorithm>
#include <functional>

#include "kernels/cpu/cpu_features.h"
#include "kv/sequence_kv.h"

namespace folio {

namespace {

// The most passes side by side without a memory limit: see the header.
size_t most_passes_in_flight() { return kernels::int8_amx_active() ? 8 : 4; }

int64_t whole_blocks(int64_t tokens) { return (tokens + kDefaultBlockTokens - 1) / kDefaultBlockTokens * kDefaultBlockTokens; }

}  // namespace

size_t ocr_pass_kv_bound(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, size_t first, size_t count) {
  constexpr int64_t kPromptTokens = 64;  // the prompt's text around the pages, generously
  Decoder& dec = model.decoder();
  const KVLayout lay = opt.kv_types ? dec.kv_layout(*opt.kv_types) : dec.kv_layout(opt.kv_dtype);
  int64_t reference = kPromptTokens;
  for (size_t i = first; i < first + count; ++i) reference += model.image_tokens(pages, i, opt.mode);
  int64_t generated = opt.policy.window + kDefaultBlockTokens;  // the window's ring, a block being filled
  if (opt.policy.kind == KVPolicyKind::Full)
    generated = opt.max_tokens > 0 ? opt.max_tokens : dec.config().max_positions / 2;
  const int64_t tokens = whole_blocks(reference) + whole_blocks(generated);
  return static_cast<size_t>(static_cast<double>(tokens) * lay.reference_bytes_per_token());
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
