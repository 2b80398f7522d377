#include "runtime/ocr_pipeline.h"

#include "kv/file_tier.h"
#include "kv/ram_tier.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/memory_stats.h"
#include "doc/ocr_json.h"
#include "doc/ocr_markdown.h"
#include "kv/block_pool.h"
#include "runtime/generator.h"
#include "runtime/ocr_pass_reader.h"
#include "runtime/scheduler.h"
#include "text/tokenizer.h"

namespace folio {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

const char* mode_name(VisionMode m) { return m == VisionMode::Gundam ? "gundam" : "base"; }

}  // namespace

std::vector<OcrPage> fit_ocr_pages(std::vector<OcrPage> parsed, size_t count, size_t first, std::vector<std::string>& warnings) {
  if (parsed.size() != count && !(parsed.empty() && count == 1))
    warnings.push_back("pages " + std::to_string(first + 1) + "-" + std::to_string(first + count) + ": the model wrote " +
                       std::to_string(parsed.size()) + " page(s) for " + std::to_string(count) +
                       (parsed.size() > count ? "; the extra ones are merged into the last page" : "; the missing ones are empty"));
  while (parsed.size() > count) {
    OcrPage extra = std::move(parsed.back());
    parsed.pop_back();
    auto& last = parsed.back().blocks;
    last.insert(last.end(), std::make_move_iterator(extra.blocks.begin()), std::make_move_iterator(extra.blocks.end()));
  }
  parsed.resize(count);
  return parsed;
}

std::vector<std::pair<size_t, size_t>> plan_ocr_passes(OcrModel& model, const OcrPages& pages, const OcrOptions& opt) {
  FOLIO_CHECK_INPUT(pages.size() > 0, "no pages to read");
  const size_t model_max = model.max_pages_per_pass(opt.mode);
  if (opt.pages_per_pass > model_max)
    throw_invalid("--pages-per-pass " + std::to_string(opt.pages_per_pass) + ": " + model.name() + " reads at most " +
                  std::to_string(model_max) + " page(s) per pass in " + mode_name(opt.mode) + " mode");
  const bool automatic = opt.pages_per_pass == 0;
  // A rolling reference holds a few pages whatever the document's length: one pass reads it all.
  if (opt.policy.rolls()) {
    if (!automatic && opt.pages_per_pass < pages.size())
      throw_invalid("--pages-per-pass does not apply to the rolling policy: it reads the whole document in one pass");
    return {{0, pages.size()}};
  }
  const size_t limit = automatic ? opt.policy.automatic_pages_per_pass(pages.size(), model_max, kDefaultPagesPerPass) : opt.pages_per_pass;
  const int64_t context = model.decoder().config().max_positions;
  // Automatic passes leave at least half the context for the output.
  const int64_t budget = automatic ? context / 2 : context - 1;
  std::vector<std::pair<size_t, size_t>> passes;
  size_t first = 0, count = 0;
  int64_t used = 0;
  for (size_t i = 0; i < pages.size(); ++i) {
    const int64_t t = model.image_tokens(pages, i, opt.mode);
    if (t >= context - 1)
      throw_invalid(pages.describe(i) + " takes " + std::to_string(t) + " image tokens in " + mode_name(opt.mode) +
                    " mode but the model's context is " + std::to_string(context) +
                    (opt.mode == VisionMode::Gundam ? " (try --mode base)" : ""));
    if (count > 0 && (count == limit || used + t > budget)) {
      passes.push_back({first, count});
      first = i;
      count = 0;
      used = 0;
    }
    ++count;
    used += t;
  }
  passes.push_back({first, count});
  return passes;
}

KVPolicy policy_for_budget(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, std::string& why) {
  FOLIO_CHECK_INPUT(opt.kv_budget > 0, "a KV budget is needed to choose the policy by it");
  Decoder& dec = model.decoder();
  const KVLayout lay = opt.kv_types ? dec.kv_layout(*opt.kv_types) : dec.kv_layout(opt.kv_dtype);
  const double per_token = lay.reference_bytes_per_token();
  // Upper bounds: the model's image tokens per page (the mini model's bound assumes every frame
  // reads a glyph), plus text tokens, plus the window's ring.
  std::vector<double> page_bytes;
  double total = static_cast<double>(opt.policy.window + 64) * per_token;
  const double window_bytes = total;
  for (size_t i = 0; i < pages.size(); ++i) {
    page_bytes.push_back(static_cast<double>(model.image_tokens(pages, i, opt.mode)) * per_token);
    total += page_bytes.back();
  }
  const double budget = static_cast<double>(opt.kv_budget);
  auto mib = [](double b) { return std::to_string(static_cast<long long>(b / (1 << 20) + 0.5)) + " MiB"; };
  KVPolicy p = opt.policy;
  if (total <= budget) {
    p.kind = KVPolicyKind::RSwa;
    why = "KV budget " + mib(budget) + ": the whole reference fits (at most " + mib(total) + "), using rswa";
    return p;
  }
  FOLIO_CHECK_INPUT(model.can_roll(), "KV budget " + mib(budget) + " is too small for the " + std::to_string(pages.size()) +
                                          "-page reference (up to " + mib(total) + ") and " + model.name() +
                                          " cannot roll its reference; raise --kv-budget or read fewer pages");
  const double largest = *std::max_element(page_bytes.begin(), page_bytes.end());
  const auto resident = static_cast<int64_t>((budget - window_bytes) / std::max(largest, 1.0));
  FOLIO_CHECK_INPUT(resident >= 1, "KV budget " + mib(budget) + " cannot hold even one page (up to " + mib(largest) +
                                       ") and the window; raise --kv-budget");
  p.kind = KVPolicyKind::Rolling;
  p.resident_pages = std::min<int64_t>(resident, 8);
  why = "KV budget " + mib(budget) + ": the " + std::to_string(pages.size()) + "-page reference (up to " + mib(total) +
        ") does not fit, switching to rolling with " + std::to_string(p.resident_pages) + " resident page(s)";
  return p;
}

double decode_read_gbs(const OcrStats& st) {
  return st.decode_ms > 0 ? static_cast<double>(st.decode_weight_bytes + st.decode_kv_bytes) / (st.decode_ms * 1e6) : 0.0;
}

namespace {

// One reading of a document: its pool, reference store, stats and progress. Pages go to the sink
// as their passes end, in page order; text and tokens are kept only for run_ocr (`keep`).
class OcrRun {
 public:
  OcrRun(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, const OcrCallbacks& cb,
         size_t passes, OcrPageSink& sink, OcrResult* keep)
      : model_(model), pages_(pages), opt_(opt), threads_(threads), cb_(cb), sink_(sink), keep_(keep),
        pool_(opt.kv_types ? model.decoder().kv_layout(*opt.kv_types) : model.decoder().kv_layout(opt.kv_dtype), opt.kv_budget),
        gen_(model.decoder(), pool_, threads) {
    if (!opt.kv_offload_dir.empty())
      store_ = std::make_unique<TieredStore>(std::make_unique<RamTier>(opt.kv_hot_bytes),
                                             std::make_unique<FileTier>(opt.kv_offload_dir, opt.kv_cold_bytes));
    // Reference KV kept between the passes (a store reads its reference from disk instead).
    else if (opt.prefix_cache_bytes > 0) gen_.keep_references(opt.prefix_cache_bytes);
    stats_.pages = pages.size();
    stats_.passes = passes;
    reads_at_start_ = model.decoder().decode_reads();
    prog_.pages_total = pages.size();
    prog_.passes = passes;
  }

  void read(const std::vector<std::pair<size_t, size_t>>& passes);
  OcrSummary finish();

 private:
  struct Pass;

  void report() {
    if (cb_.on_progress) cb_.on_progress(prog_);
  }
  void emit(std::string_view s) {
    if (keep_) keep_->text.append(s);
    if (cb_.on_text && !s.empty()) cb_.on_text(s);
  }
  OcrPass prepare(size_t first, size_t count);
  GenerationOptions options(const OcrPass& pass, size_t pi, size_t count) const;
  void absorb(const GenerationResult& r);
  void count_token(std::optional<Clock::time_point>& first_token, double decode_ms_before);

  OcrModel& model_;
  const Clock::time_point started_ = Clock::now();
  Decoder::DecodeReads reads_at_start_;  // the decoder's counters before this run
  const OcrPages& pages_;
  const OcrOptions& opt_;
  ThreadPool& threads_;
  const OcrCallbacks& cb_;
  OcrPageSink& sink_;
  OcrResult* keep_;  // run_ocr's: text, tokens and predicted ids collect here
  KVBlockPool pool_;
  Generator gen_;
  std::unique_ptr<TieredStore> store_;
  OcrStats stats_;
  std::vector<std::string> warnings_;
  OcrProgress prog_;
};

// Models that read their pages while preparing (the mini models) spend their encoding time here;
// lazy ones (Unlimited-OCR) spend it during prefill (GenerationResult::produce_ms).
OcrPass OcrRun::prepare(size_t first, size_t count) {
  const auto start = Clock::now();
  auto on_encoded = [this](size_t, double) {
    ++prog_.pages_encoded;
    prog_.kv_bytes = pool_.bytes_in_use();
    report();
  };
  OcrPass pass = prepare_ocr_pass(model_, pages_, first, count, opt_.policy, opt_.mode, threads_, on_encoded);
  // Kept reference KV is found by content: every page's rows are produced (encoded) now and keyed.
  if (opt_.prefix_cache_bytes > 0 && opt_.policy.reference_reusable())
    for (ReferencePart& part : pass.reference) produce_keyed(part, model_.decoder().config().hidden);
  stats_.encode_ms += ms_between(start, Clock::now());
  return pass;
}

GenerationOptions OcrRun::options(const OcrPass& pass, size_t pi, size_t count) const {
  GenerationOptions g{pass.generation};  // copies the hooks: they share the pass's state
  g.policy = opt_.policy;
  g.prefill_chunk = opt_.prefill_chunk;
  g.reference_store = store_.get();
  // By default the model's bound (the whole context for Unlimited-OCR): generation stops at EOS.
  g.max_tokens = opt_.max_tokens > 0 ? opt_.max_tokens : model_.max_output_tokens(count);
  if (opt_.no_repeat_ngram) g.no_repeat_ngram = *opt_.no_repeat_ngram;
  if (opt_.no_repeat_window) g.no_repeat_window = *opt_.no_repeat_window;
  if (opt_.teacher) {
    const std::vector<int64_t>& per_pass = opt_.teacher->stats.pass_tokens;
    FOLIO_CHECK_INPUT(per_pass.size() == stats_.passes, "teacher forcing: the teacher run has " + std::to_string(per_pass.size()) +
                                                           " passes, this one " + std::to_string(stats_.passes));
    size_t at = 0;
    for (size_t k = 0; k < pi; ++k) at += static_cast<size_t>(per_pass[k]);
    const auto from = opt_.teacher->tokens.begin() + static_cast<std::ptrdiff_t>(at);
    g.teacher.assign(from, from + static_cast<std::ptrdiff_t>(per_pass[pi]));
    g.max_tokens = std::max<int64_t>(g.max_tokens, static_cast<int64_t>(g.teacher.size()));
  }
  return g;
}

// A token generated: the progress figures (decode rate since the first token of this decoding).
void OcrRun::count_token(std::optional<Clock::time_point>& first_token, double decode_ms_before) {
  const auto now = Clock::now();
  if (!first_token) first_token = now;
  ++prog_.tokens;
  const double ms = decode_ms_before + ms_between(*first_token, now);
  prog_.tokens_per_s = ms > 0 ? 1000.0 * static_cast<double>(prog_.tokens) / ms : 0.0;
  prog_.kv_bytes = pool_.bytes_in_use();
  stats_.kv_bytes_last = prog_.kv_bytes;
  report();
}

// One pass, from its preparation until its pages are handed over.
struct OcrRun::Pass {
  OcrPass pass;
  std::optional<OcrPassReader> reader;
  std::optional<GenerationResult> result;  // set when it ended
};

// The passes, at most opt_.passes_in_flight decoding side by side (one: one pass after another).
// Each is prepared only when it can start (a prepared pass of the mini models holds its pages'
// readings) and at most a few passes past the oldest one not handed over, so a long pass does not
// let later ones pile up. Text is emitted in pass order, a pass's as it comes once the passes
// before it have ended; its pages go to the sink then, and the pass is let go.
void OcrRun::read(const std::vector<std::pair<size_t, size_t>>& plan) {
  // Passes made past the oldest one not handed over, at most: room for a few to end early (they
  // wait, holding their text) without stalling the others, and a bound on what waits.
  const size_t ahead = 4 * opt_.passes_in_flight;
  std::vector<std::unique_ptr<Pass>> runs(plan.size());
  OcrTextInOrder order;
  size_t handed = 0, made = 0;
  auto reader = [&](size_t k) -> const OcrPassReader* { return runs[k] ? &*runs[k]->reader : nullptr; };
  auto flush = [&] {
    emit(order.take(runs.size(), reader));
    prog_.pass = std::min(order.current() + 1, plan.size());
    for (; handed < order.current(); ++handed) {
      absorb(*runs[handed]->result);
      for (auto& [index, page] : runs[handed]->reader->take_final_pages(warnings_)) sink_.page(index, std::move(page));
      runs[handed].reset();
    }
  };
  std::optional<Clock::time_point> first_token;
  const double decode_ms_before = stats_.decode_ms;
  auto next = [&]() -> std::optional<Generator::BatchItem> {
    if (made == plan.size() || made >= handed + ahead) return std::nullopt;
    const size_t k = made++;
    runs[k] = std::make_unique<Pass>();
    Pass& run = *runs[k];
    run.pass = prepare(plan[k].first, plan[k].second);
    run.reader.emplace(model_, run.pass, plan[k].first, plan[k].second);
    GenerationOptions g = options(run.pass, k, plan[k].second);
    auto on_token = [&, k](int32_t tok) {
      OcrPassReader& r = *runs[k]->reader;
      r.push(tok);
      flush();
      count_token(first_token, decode_ms_before);
      // The first token comes from the prefill's logits, before any generated token is stored (and
      // before --kv-keep compresses the reference): what decoding holds is seen from the second on.
      if (r.tokens().size() > 1) stats_.kv_bytes_decoding_max = std::max(stats_.kv_bytes_decoding_max, prog_.kv_bytes);
      return true;
    };
    auto on_done = [&, k](const GenerationResult& res) {
      Pass& r = *runs[k];
      r.reader->end();
      r.result = res;
      r.pass = OcrPass{};  // its pages' readings: only the text is needed from here
      flush();
    };
    return Generator::BatchItem{run.pass.reference, std::move(g), on_token, on_done};
  };
  OcrStats& st = stats_;
  const double prefill_before = st.prefill_ms, produce_before = st.encode_ms;
  const auto start = Clock::now();
  SchedulerStats steps;
  gen_.generate_fed(next, static_cast<int64_t>(opt_.passes_in_flight), &steps);
  const auto end = Clock::now();
  // The passes shared their forward passes, so their own times overlap: prefill is the time of the
  // forward passes that prefilled (no pass decodes in those), decode the rest of the batch's time
  // besides producing rows (preparing passes and encoding pages, counted by each pass: it happens
  // one part at a time).
  const double total = ms_between(start, end), produce = st.encode_ms - produce_before;
  st.prefill_ms = prefill_before + steps.prefill_forward_ms;
  st.decode_ms = decode_ms_before + std::max(0.0, total - produce - steps.prefill_forward_ms);
}

void OcrRun::absorb(const GenerationResult& r) {
  OcrStats& st = stats_;
  const auto generated = static_cast<int64_t>(r.tokens.size());
  if (keep_) {
    keep_->predicted.insert(keep_->predicted.end(), r.predicted.begin(), r.predicted.end());
    keep_->tokens.insert(keep_->tokens.end(), r.tokens.begin(), r.tokens.end());
  }
  st.pass_tokens.push_back(generated);
  st.reference_tokens += r.reference_tokens;
  st.cached_reference_tokens += r.cached_prompt_tokens;
  st.decode_tokens += generated;
  st.kv_active_bytes_max = std::max(st.kv_active_bytes_max, r.kv_active_bytes_max);
  st.kv_offloaded_bytes_peak = std::max(st.kv_offloaded_bytes_peak, r.kv_offloaded_bytes_peak);
  st.encode_ms += r.produce_ms;  // prefill and decode are timed over the whole batch (read)
  st.stop_reasons.push_back(std::string(r.stop_reason.name()));
}

nlohmann::json stats_json(const OcrStats& st, const KVPolicy& policy) {
  return {{"pages", st.pages},
          {"passes", st.passes},
          {"cached_reference_tokens", st.cached_reference_tokens},
          {"policy", policy.name()},
          {"window", policy.window},
          {"reference_tokens", st.reference_tokens},
          {"decode_tokens", st.decode_tokens},
          {"encode_ms", st.encode_ms},
          {"prefill_ms", st.prefill_ms},
          {"decode_ms", st.decode_ms},
          {"wall_ms", st.wall_ms},
          {"decode_tokens_per_s", st.tokens_per_s},
          {"decode_steps", st.decode_steps},
          {"decode_weight_bytes", st.decode_weight_bytes},
          {"decode_kv_bytes", st.decode_kv_bytes},
          {"decode_read_gbs", decode_read_gbs(st)},
          {"kv_bytes_last", st.kv_bytes_last},
          {"kv_bytes_decoding_max", st.kv_bytes_decoding_max},
          {"kv_bytes_peak", st.kv_bytes_peak},
          {"kv_offloaded_bytes_peak", st.kv_offloaded_bytes_peak},
          {"kv_store_acquires", st.kv_store_acquires},
          {"kv_store_cold_reads", st.kv_store_cold_reads},
          {"kv_store_promotions", st.kv_store_promotions},
          {"rss_peak_bytes", st.rss_peak_bytes},
          {"stop_reasons", st.stop_reasons}};
}

OcrSummary OcrRun::finish() {
  OcrStats& st = stats_;
  st.tokens_per_s = st.decode_ms > 0 ? 1000.0 * static_cast<double>(st.decode_tokens) / st.decode_ms : 0.0;
  st.kv_bytes_peak = pool_.peak_bytes();
  if (store_) {
    const TieredStoreStats ts = store_->stats();
    st.kv_store_acquires = ts.acquires;
    st.kv_store_cold_reads = ts.tiers[1].hits;
    st.kv_store_promotions = ts.tiers[1].promotions;
  }
  const Decoder::DecodeReads reads = model_.decoder().decode_reads();
  st.decode_steps = reads.steps - reads_at_start_.steps;
  st.decode_weight_bytes = reads.weight_bytes - reads_at_start_.weight_bytes;
  st.decode_kv_bytes = reads.kv_bytes - reads_at_start_.kv_bytes;
  st.rss_peak_bytes = peak_rss_bytes();
  st.wall_ms = ms_between(started_, Clock::now());
  return {std::move(stats_), std::move(warnings_)};
}

OcrSummary read_document(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads,
                         const OcrCallbacks& cb, OcrPageSink& sink, OcrResult* keep) {
  if (opt.max_tokens < 0) throw_invalid("--max-tokens must not be negative");
  const auto passes = plan_ocr_passes(model, pages, opt);
  if (opt.passes_in_flight < 1) throw_invalid("--passes-in-flight must be at least 1");
  OcrRun run(model, pages, opt, threads, cb, passes.size(), sink, keep);
  run.read(passes);
  return run.finish();
}

class CollectPages : public OcrPageSink {
 public:
  explicit CollectPages(std::vector<OcrPage>& into) : into_(into) {}
  void page(size_t, OcrPage page) override { into_.push_back(std::move(page)); }

 private:
  std::vector<OcrPage>& into_;
};

}  // namespace

nlohmann::json ocr_json_head(const OcrModel& model, const OcrOptions& opt) {
  return {{"model", model.name()}, {"mode", mode_name(opt.mode)}};
}

nlohmann::json ocr_page_entry(const OcrPages& pages, size_t index, const OcrPage& page) {
  const OcrPageRef& ref = pages.page(index);
  const PageSize size{ref.width, ref.height};
  nlohmann::json entry = ocr_page_to_json(page, index, &size);
  entry["source"] = ref.file;
  entry["source_page"] = ref.index + 1;
  return entry;
}

nlohmann::json ocr_json_tail(const OcrModel& model, const OcrOptions& opt, const OcrSummary& summary) {
  nlohmann::json tail = {{"stats", stats_json(summary.stats, opt.policy)}};
  tail["stats"]["encoder_precision"] = model.encoder_precision();
  tail["stats"]["prefill_precision"] = model.prefill_precision();
  if (!summary.warnings.empty()) tail["warnings"] = summary.warnings;
  return tail;
}

OcrSummary run_ocr_pages(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, OcrPageSink& sink,
                         const OcrCallbacks& cb) {
  return read_document(model, pages, opt, threads, cb, sink, nullptr);
}

OcrResult run_ocr(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, const OcrCallbacks& cb) {
  OcrResult out;
  CollectPages collect(out.pages);
  OcrSummary summary = read_document(model, pages, opt, threads, cb, collect, &out);
  for (const OcrPage& p : out.pages) out.page_markdown.push_back(page_markdown(p));
  out.markdown = document_markdown(out.pages);
  out.json = ocr_json_head(model, opt);
  out.json["pages"] = nlohmann::json::array();
  for (size_t i = 0; i < out.pages.size(); ++i) out.json["pages"].push_back(ocr_page_entry(pages, i, out.pages[i]));
  const nlohmann::json tail = ocr_json_tail(model, opt, summary);
  for (const auto& [key, value] : tail.items()) out.json[key] = value;
  out.stats = std::move(summary.stats);
  out.warnings = std::move(summary.warnings);
  return out;
}

}  // namespace folio
