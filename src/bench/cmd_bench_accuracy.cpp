// folio bench accuracy: what a policy or KV format costs in quality (docs/bench-contract.md), on
// the held-out documents of data/heldout, against the ground truth and a baseline run
// (policy full, KV f32). `--engine tesseract` reads the same rendered pages with Debian's
// tesseract-ocr instead, measured the same way.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/json_output.h"
#include "cmdline/commands.h"
#include "core/error.h"
#include "core/memory_stats.h"
#include "core/thread_pool.h"
#include "cmdline/kv_options.h"
#include "kv/kv_dtype.h"
#include "runtime/default_model.h"
#include "runtime/ocr_accuracy.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pipeline.h"
#include "runtime/scoring_text.h"
#include "runtime/tesseract_baseline.h"

namespace folio::cli {

namespace {

constexpr const char* kPageMarker = "<page>";

// The document's text as the model read it, page by page, joined by the page marker. Not the raw
// decoded text: passes are decoded separately, and no marker separates the last page of one pass
// from the first of the next.
std::string paged_text(const OcrResult& r) {
  std::string out;
  for (size_t i = 0; i < r.pages.size(); ++i) {
    if (i > 0) out += kPageMarker;
    for (size_t b = 0; b < r.pages[i].blocks.size(); ++b) out += (b > 0 ? "\n" : "") + r.pages[i].blocks[b].text;
  }
  return out;
}

// CER of a reading against the document's truth, compared as its set says: exact, or normalised
// text (markdown syntax off a folio reading, then scoring_text on both sides, page by page).
CerCount scored_cer(const std::string& reading, const HeldoutDoc& d, bool markdown) {
  if (!d.normalised) return text_cer(reading, d.text, kPageMarker);
  const std::string hyp = map_pages(reading, kPageMarker, [&](const std::string& page) {
    return scoring_text(markdown ? markdown_as_text(page) : page);
  });
  return text_cer(hyp, map_pages(d.text, kPageMarker, [](const std::string& page) { return scoring_text(page); }), kPageMarker);
}

struct AccuracyArgs {
  std::string model, engine = "folio", baseline_policy = "full",
                     baseline_kv_dtype = "f32", sets, json;
  KVOptions kv;
  PolicyOptions policy;
  int docs = 1, pages = 1, threads = 0;
  double dpi = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The documents read: a held-out set, or for page counts without a set of their own (100, 500)
// one document composed of the held-out pages.
std::vector<HeldoutDoc> accuracy_docs(const AccuracyArgs& a, const std::string& sets) {
  const bool composed = !std::filesystem::is_directory(std::filesystem::path(sets) / ("p" + std::to_string(a.pages)));
  if (composed && a.docs != 1)
    throw_invalid("there is no held-out set of " + std::to_string(a.pages) + "-page documents; --docs must be 1 to read one composed of held-out pages");
  return composed ? std::vector<HeldoutDoc>{composed_heldout_doc(sets, a.pages)} : heldout_docs(sets, a.pages, a.docs);
}

// Debian's tesseract-ocr over the same rendered pages: adds its fields to j.
void read_with_tesseract(const AccuracyArgs& a, const std::vector<HeldoutDoc>& docs, ThreadPool& threads, nlohmann::json& j) {
  const double dpi = a.dpi > 0 ? a.dpi : kDefaultPdfDpi;
  CerCount cer;
  double seconds = 0;
  nlohmann::json per_doc = nlohmann::json::array();
  for (const HeldoutDoc& d : docs) {
    const OcrPages pages = OcrPages::open(d.sources(), d.page_range, dpi);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string text = tesseract_read(pages, kPageMarker, threads.size());
    seconds += seconds_since(t0);
    const CerCount c = scored_cer(text, d, false);
    cer += c;
    per_doc.push_back({{"pdf", d.pdf}, {"cer", c.cer()}, {"errors", c.errors}, {"chars", c.chars}});
  }
  j.update({{"model", "tesseract"}, {"dpi", dpi}, {"cer", cer.cer()}, {"errors", cer.errors}, {"chars", cer.chars},
            {"pages_per_s", seconds > 0 ? a.docs * a.pages / seconds : 0.0}, {"documents", per_doc}});
}

// A folio run and its baseline over all documents, summed.
struct AccuracyTally {
  CerCount cer, base_cer;
  double agree_num = 0, agree_den = 0, seconds = 0, forced_same = 0, forced_steps = 0;
  double encode_ms = 0;  // rendering, preprocessing and vision encoding of the run's pages (not the baseline's)
  size_t kv_peak = 0, base_kv_peak = 0, kv_active = 0, base_kv_active = 0, offloaded = 0;
  size_t kv_decoding = 0, base_kv_decoding = 0;  // the most pool bytes held at a generated token
  size_t passes = 0, base_passes = 0;
  uint64_t cold_reads = 0, acquires = 0;
  bool forced_unavailable = false;
  nlohmann::json per_doc = nlohmann::json::array();

  void add(const HeldoutDoc& d, const OcrResult& r, const OcrResult& b) {
    const CerCount c = scored_cer(paged_text(r), d, true), bc = scored_cer(paged_text(b), d, true);
    cer += c;
    base_cer += bc;
    const double n = static_cast<double>(std::max(r.tokens.size(), b.tokens.size()));
    agree_num += token_agreement(r.tokens, b.tokens) * n;
    agree_den += n;
    encode_ms += r.stats.encode_ms;
    kv_peak = std::max(kv_peak, r.stats.kv_bytes_peak);
    kv_decoding = std::max(kv_decoding, r.stats.kv_bytes_decoding_max);
    base_kv_decoding = std::max(base_kv_decoding, b.stats.kv_bytes_decoding_max);
    kv_active = std::max(kv_active, r.stats.kv_active_bytes_max);
    offloaded = std::max(offloaded, r.stats.kv_offloaded_bytes_peak);
    cold_reads += r.stats.kv_store_cold_reads;
    acquires += r.stats.kv_store_acquires;
    base_kv_active = std::max(base_kv_active, b.stats.kv_active_bytes_max);
    base_kv_peak = std::max(base_kv_peak, b.stats.kv_bytes_peak);
    passes += r.stats.passes;
    base_passes += b.stats.passes;
    per_doc.push_back({{"pdf", d.pdf}, {"cer", c.cer()}, {"baseline_cer", bc.cer()}, {"tokens", r.tokens.size()},
                       {"kv_bytes_peak", r.stats.kv_bytes_peak}, {"encode_ms", r.stats.encode_ms},
                       {"stop_reasons", r.stats.stop_reasons}});
  }
};

// Teacher-forced agreement of one document: fed the baseline's tokens, does the run choose the
// same next token? Counts per-step differences without one early difference shifting everything
// after it. Not measurable when the baseline's passes end where the run's do not (sparse reads
// more pages per pass than rswa): its tokens cannot be fed through the run's passes.
void teacher_force(OcrModel& model, const OcrPages& pages, const OcrOptions& run, const OcrResult& r, const OcrResult& b,
                   bool same, ThreadPool& threads, AccuracyTally& t) {
  t.forced_steps += static_cast<double>(b.tokens.size());
  if (same) {
    t.forced_same += static_cast<double>(b.tokens.size());
    return;
  }
  if (r.stats.passes != b.stats.passes) {
    t.forced_unavailable = true;
    return;
  }
  OcrOptions forced = run;
  forced.teacher = &b;
  const OcrResult f = run_ocr(model, pages, forced, threads);
  for (size_t i = 0; i < f.predicted.size() && i < b.tokens.size(); ++i) t.forced_same += f.predicted[i] == b.tokens[i];
}

// folio against its baseline (policy full, KV f32 unless said): adds their fields to j.
AccuracyTally read_with_folio(const AccuracyArgs& a, const std::vector<HeldoutDoc>& docs, ThreadPool& threads, nlohmann::json& j) {
  const std::string model_dir = a.model.empty() ? default_ocr_model_dir() : a.model;
  std::unique_ptr<OcrModel> model = load_ocr_model(model_dir);
  const double dpi = a.dpi > 0 ? a.dpi : model->pdf_dpi();
  OcrOptions run, base;
  run.policy = a.policy.policy();
  a.kv.apply(run);
  // The baseline shares the run's policy parameters (window, sparse top-k, resident pages).
  base.policy = run.policy;
  base.policy.kind = KVPolicy::parse(a.baseline_policy, a.policy.window).kind;
  base.policy.keep = 1.0;  // the baseline's reference is never compressed
  base.kv_types = KVTypes::uniform(parse_kv_type(a.baseline_kv_dtype, "--baseline-kv-dtype"));
  const bool same = run.policy.name() == base.policy.name() && run.policy.keep == base.policy.keep &&
                    run.kv_types->name() == base.kv_types->name();
  AccuracyTally t;
  for (const HeldoutDoc& d : docs) {
    const OcrPages pages = OcrPages::open(d.sources(), d.page_range, dpi);
    const auto t0 = std::chrono::steady_clock::now();
    const OcrResult r = run_ocr(*model, pages, run, threads);
    t.seconds += seconds_since(t0);
    // The same settings: the run is its own baseline (not a copy: a long document's result is big).
    std::optional<OcrResult> other;
    if (!same) other = run_ocr(*model, pages, base, threads);
    const OcrResult& b = same ? r : *other;
    t.add(d, r, b);
    teacher_force(*model, pages, run, r, b, same, threads, t);
  }
  j.update({{"model", model_dir}, {"policy", run.policy.name()}, {"window", a.policy.window}, {"kv_dtype", run.kv_types->name()},
            {"sparse_top_k", run.policy.top_k}, {"sparse_focus_pages", run.policy.focus_pages}, {"resident_pages", run.policy.resident_pages},
            {"baseline_policy", base.policy.name()}, {"baseline_kv_dtype", a.baseline_kv_dtype}, {"dpi", dpi},
            {"threads", threads.size()}, {"cer", t.cer.cer()}, {"errors", t.cer.errors}, {"chars", t.cer.chars},
            {"baseline_cer", t.base_cer.cer()}, {"token_agreement_with_baseline", t.agree_den > 0 ? t.agree_num / t.agree_den : 1.0},
            {"kv_bytes_peak", t.kv_peak}, {"baseline_kv_bytes_peak", t.base_kv_peak},
            {"kv_keep", run.policy.keep}, {"kv_observe", run.policy.observe},
            {"kv_bytes_decoding_max", t.kv_decoding}, {"baseline_kv_bytes_decoding_max", t.base_kv_decoding},
            {"kv_active_bytes_max", t.kv_active}, {"baseline_kv_active_bytes_max", t.base_kv_active},
            {"passes", t.passes}, {"baseline_passes", t.base_passes},
            {"pages_per_s", t.seconds > 0 ? a.docs * a.pages / t.seconds : 0.0}, {"rss_peak_bytes", peak_rss_bytes()},
            {"encode_ms", t.encode_ms},
            {"documents", t.per_doc}});
  if (!run.kv_offload_dir.empty())
    j.update({{"kv_offload", true}, {"kv_hot_bytes", run.kv_hot_bytes}, {"kv_cold_bytes", run.kv_cold_bytes},
              {"kv_offloaded_bytes_peak", t.offloaded}, {"kv_store_acquires", t.acquires}, {"kv_store_cold_reads", t.cold_reads}});
  if (t.forced_unavailable)
    j["teacher_forced_note"] = "not measured: the run and the baseline split the document into different passes";
  else
    j["teacher_forced_agreement_with_baseline"] = t.forced_steps > 0 ? t.forced_same / t.forced_steps : 1.0;
  return t;
}

int run_accuracy(const AccuracyArgs& a) {
  const JsonOutput json_out(a.json);
  if (a.engine != "folio" && a.engine != "tesseract") throw_invalid("--engine must be folio or tesseract, not '" + a.engine + "'");
  const std::string sets = a.sets.empty() ? shipped_path("data/heldout") : a.sets;
  const std::vector<HeldoutDoc> docs = accuracy_docs(a, sets);
  ThreadPool threads(a.threads);
  nlohmann::json j = {{"suite", "accuracy"}, {"engine", a.engine}, {"docs", a.docs}, {"pages", a.pages},
                      {"sets", sets}, {"page_marker", kPageMarker},
                      {"compare", docs.front().normalised ? "normalised-text" : "exact"}};
  if (a.engine == "tesseract") read_with_tesseract(a, docs, threads, j);
  else read_with_folio(a, docs, threads, j);
  json_out.write(j);
  std::printf("accuracy %s, %d x %d-page documents: CER %.4f", a.engine.c_str(), a.docs, a.pages, j["cer"].get<double>());
  if (a.engine == "folio")
    std::printf(" (baseline %s/%s: %.4f), token agreement %.4f (teacher-forced %.4f), KV peak %zu bytes (baseline %zu)",
                a.baseline_policy.c_str(), a.baseline_kv_dtype.c_str(), j["baseline_cer"].get<double>(),
                j["token_agreement_with_baseline"].get<double>(), j.value("teacher_forced_agreement_with_baseline", -1.0),
                j["kv_bytes_peak"].get<size_t>(), j["baseline_kv_bytes_peak"].get<size_t>());
  std::printf(", %.2f pages/s\n", j["pages_per_s"].get<double>());
  return 0;
}

}  // namespace

SubRunner add_bench_accuracy(CLI::App& bench) {
  auto a = std::make_shared<AccuracyArgs>();
  CLI::App* c = bench.add_subcommand("accuracy", "CER and token agreement on held-out documents");
  c->add_option("--model", a->model, "OCR model directory (default: the shipped model)");
  c->add_option("--engine", a->engine, "folio, or tesseract for the baseline")->capture_default_str();
  c->add_option("--docs", a->docs, "Documents D")->capture_default_str();
  c->add_option("--pages", a->pages, "Pages per document P (a held-out set data/heldout/pP must exist)")->capture_default_str();
  add_policy_options(*c, a->policy);
  add_kv_options(*c, a->kv, true);
  c->add_option("--baseline-policy", a->baseline_policy, "Baseline KV policy")->capture_default_str();
  c->add_option("--baseline-kv-dtype", a->baseline_kv_dtype, "Baseline KV dtype")->capture_default_str();
  c->add_option("--sets", a->sets, "Directory of the held-out sets (default: the shipped data/heldout)");
  c->add_option("--dpi", a->dpi, "PDF rendering DPI (default: what the model reads best; 300 for tesseract)");
  c->add_option("--threads", a->threads, "Threads (0 = one per core)")->capture_default_str();
  c->add_option("--json", a->json, "Output JSON file")->required();
  return {c, [a]() { return run_accuracy(*a); }};
}

}  // namespace folio::cli
