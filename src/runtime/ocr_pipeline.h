// The OCR pipeline: pages in, markdown and JSON out, through any OcrModel.
//
// Pages are split into passes of consecutive pages (at most OcrOptions::pages_per_pass, at most
// what the model allows, at most what leaves half the context for output). Each pass prefills its
// reference (the model encodes its pages one at a time as prefill reaches them) and decodes under
// the chosen KV policy with the model's recipe; the decoded text streams through on_text as it
// comes (complete UTF-8 pieces, EOS not included; "\n\n" between passes). Each pass's text is
// parsed into exactly as many pages as the pass had: missing pages stay empty, pages the model
// wrote beyond them are merged into the pass's last page (and a warning says so).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "doc/ocr_output.h"
#include "doc/preprocess.h"
#include "kv/kv_policy.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pages.h"

namespace folio {

struct OcrResult;

struct OcrOptions {
  VisionMode mode = VisionMode::Base;
  KVPolicy policy;                   // rswa, window 128 by default
  DType kv_dtype = DType::BF16;
  std::optional<KVTypes> kv_types;  // overrides kv_dtype when set (quantised, per-part types)
  size_t kv_budget = 0;              // KV pool capacity in bytes, 0 = unlimited
  // Tiered reference: when set, complete reference segments (pages) leave the pool for a store of
  // RAM (kv_hot_bytes, 0 = unlimited) then a mapped file in this directory (kv_cold_bytes).
  std::string kv_offload_dir;
  size_t kv_hot_bytes = size_t{64} << 20, kv_cold_bytes = size_t{64} << 30;
  // Reference KV of finished passes kept (LRU, bytes; 0 = none): a later pass whose reference starts
  // with the same parts (the prompt, the same pages) restores them instead of prefilling.
  size_t prefix_cache_bytes = 0;
  int64_t max_tokens = 0;            // generated tokens per pass at most; 0 = until EOS or the context is full
  size_t pages_per_pass = 0;         // 0 = automatic (kDefaultPagesPerPass, capped as above)
  // Passes decoded side by side (Generator::generate_fed): each pass is prepared when it can start,
  // all prefill, then decode together, each step reading the weights once for all of them; the text is
  // the same as one pass at a time (fewer than 20 in flight: the GEMV path) and streams in pass
  // order. The KV holds that many passes at once. 1 = one pass after another.
  size_t passes_in_flight = 1;
  int64_t prefill_chunk = 2048;  // a MoE layer converts every expert it meets once per pass: fewer, longer passes
  std::optional<int> no_repeat_ngram;   // overrides of the model's recipe (0 turns the guard off)
  std::optional<int> no_repeat_window;
  // Teacher forcing: feed these tokens (another run's OcrResult) instead of the model's own, pass by
  // pass, recording its choices in OcrResult::predicted (see DecodingOptions::teacher).
  const OcrResult* teacher = nullptr;
};

inline constexpr size_t kDefaultPagesPerPass = 20;

// Live figures for a progress display, sent after each encoded page and each generated token.
struct OcrProgress {
  size_t pages_total = 0;
  size_t pages_encoded = 0;
  size_t pass = 0, passes = 0;     // 1-based current pass
  int64_t tokens = 0;              // generated so far, all passes
  double tokens_per_s = 0;         // decode rate over all passes so far
  size_t kv_bytes = 0;             // the KV pool's bytes in use now
};

struct OcrCallbacks {
  std::function<void(std::string_view)> on_text;
  std::function<void(const OcrProgress&)> on_progress;
};

struct OcrStats {
  size_t pages = 0;
  size_t passes = 0;
  int64_t reference_tokens = 0;    // all passes
  int64_t cached_reference_tokens = 0;  // of those, restored from kept reference KV (prefix_cache_bytes)
  int64_t decode_tokens = 0;       // all passes
  double encode_ms = 0;            // rendering, preprocessing and vision encoding
  double prefill_ms = 0;           // decoder over the references
  double decode_ms = 0;
  // The run from its start to its last page: encode, prefill and decode (disjoint, so they add up
  // to at most this) and what lies between them (writing pages, planning). Loading the model is
  // before it.
  double wall_ms = 0;
  double tokens_per_s = 0;         // decode_tokens / decode time
  // What the decode steps read (Decoder::DecodeReads, the steps of this run): weights streamed and
  // KV attended over; their sum over decode_ms is the read rate decode reached (decode_read_gbs).
  int64_t decode_steps = 0;
  uint64_t decode_weight_bytes = 0, decode_kv_bytes = 0;
  size_t kv_bytes_last = 0;        // pool bytes in use at the last generated token
  size_t kv_bytes_decoding_max = 0;  // the most pool bytes in use at a pass's 2nd..last token (after --kv-keep's compression)
  size_t kv_bytes_peak = 0;        // the pool's peak
  size_t kv_active_bytes_max = 0;  // most KV bytes one generated token read (sparse: its selection)
  // Tiered reference (kv_offload_dir): the most reference bytes in the store at once, and its
  // counters (acquires, those served from the file tier in place, promotions to RAM).
  size_t kv_offloaded_bytes_peak = 0;
  uint64_t kv_store_acquires = 0, kv_store_cold_reads = 0, kv_store_promotions = 0;
  size_t rss_peak_bytes = 0;
  std::vector<std::string> stop_reasons;  // per pass
  std::vector<int64_t> pass_tokens;       // generated tokens per pass
};

// (decode_weight_bytes + decode_kv_bytes) / decode_ms in GB/s; 0 without decode time.
double decode_read_gbs(const OcrStats& st);

struct OcrResult {
  std::string text;                       // decoded text of all passes, joined by "\n\n"
  std::vector<int32_t> tokens;            // generated ids of all passes, in order
  std::vector<int32_t> predicted;         // teacher forcing (OcrOptions::teacher): the model's choices
  std::vector<OcrPage> pages;             // exactly one per input page
  std::vector<std::string> page_markdown; // page_markdown() of each page
  std::string markdown;                   // document_markdown()
  nlohmann::json json;                    // ocr_to_json() + "model", "mode", "stats"
  OcrStats stats;
  std::vector<std::string> warnings;
};

// The policy for reading all of `pages` under the KV byte budget opt.kv_budget (> 0): rswa over the
// whole document in one pass while its reference (at most the model's image tokens per page) and
// window fit; otherwise rolling, when the model can roll, keeping as many pages resident as fit.
// `why` says what was chosen and why, for the user. InvalidInput when not even that fits.
KVPolicy policy_for_budget(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, std::string& why);

// The passes `pages` is split into for `model` and `opt`: [first, count) pairs. InvalidInput when a
// page alone does not fit the model's context or pages_per_pass is not possible.
std::vector<std::pair<size_t, size_t>> plan_ocr_passes(OcrModel& model, const OcrPages& pages, const OcrOptions& opt);

// Exactly `count` pages from what the model wrote for the pass of `count` pages starting at page
// `first` (0-based): missing pages are empty, extra ones are merged into the last page, and a
// warning says so.
std::vector<OcrPage> fit_ocr_pages(std::vector<OcrPage> parsed, size_t count, size_t first, std::vector<std::string>& warnings);

// Reads the document and collects everything: text, tokens, pages, markdown and JSON. Holds the
// whole document; run_ocr_pages holds a few passes.
OcrResult run_ocr(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads,
                  const OcrCallbacks& callbacks = {});

// Where run_ocr_pages hands the pages over as they are read.
class OcrPageSink {
 public:
  virtual ~OcrPageSink() = default;
  // Page `index` (0-based among the pages read), once per page and in page order: as soon as its
  // pass has ended and every page before it was handed over (passes side by side can end out of
  // order; the later ones wait). An exception thrown here ends the run; run_ocr_pages rethrows it.
  virtual void page(size_t index, OcrPage page) = 0;
};

// What is known of a document once every page was handed over.
struct OcrSummary {
  OcrStats stats;
  std::vector<std::string> warnings;
};

// Reads the document as run_ocr does (the same pages, stats and streamed text), handing each page
// to `sink` and keeping neither the text nor the tokens: what it holds is the passes in flight
// (OcrOptions::passes_in_flight, and passes that ended but wait for an earlier one, a bounded few),
// not the document. The rolling policy reads the document in one pass, whose text is held until it
// ends. Errors as run_ocr's; pages handed over before an error stay handed over.
OcrSummary run_ocr_pages(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, OcrPageSink& sink,
                         const OcrCallbacks& callbacks = {});

// The pieces of OcrResult::json, for writing it page by page (doc/ocr_document_writer.h): the
// members before "pages" ("model", "mode"), the entry of page `index` (ocr_page_to_json plus its
// "source" file and 1-based "source_page"), and the members after "pages" ("stats", "warnings").
nlohmann::json ocr_json_head(const OcrModel& model, const OcrOptions& opt);
nlohmann::json ocr_page_entry(const OcrPages& pages, size_t index, const OcrPage& page);
nlohmann::json ocr_json_tail(const OcrModel& model, const OcrOptions& opt, const OcrSummary& summary);

}  // namespace folio
