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

namespace {

// One run_ocr: its pool, reference store, result and progress; passes are read in order.
class OcrRun {
 public:
  OcrRun(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, const OcrCallbacks& cb,
         size_t passes)
      : model_(model), pages_(pages), opt_(opt), threads_(threads), cb_(cb),
        pool_(opt.kv_types ? model.decoder().kv_layout(*opt.kv_types) : model.decoder().kv_layout(opt.kv_dtype), opt.kv_budget),
        gen_(model.decoder(), pool_, threads) {
    if (!opt.kv_offload_dir.empty())
      store_ = std::make_unique<TieredStore>(std::make_unique<RamTier>(opt.kv_hot_bytes),
                                             std::make_unique<FileTier>(opt.kv_offload_dir, opt.kv_cold_bytes));
    // Reference KV kept between the passes (a store reads its reference from disk instead).
    else if (opt.prefix_cache_bytes > 0) gen_.keep_references(opt.prefix_cache_bytes);
    out_.stats.pages = pages.size();
    out_.stats.passes = passes;
    prog_.pages_total = pages.size();
    prog_.passes = passes;
  }

  void read_pass(size_t pi, size_t first, size_t count);
  void read_side_by_side(const std::vector<std::pair<size_t, size_t>>& passes);
  OcrResult finish();

 private:
  void report() {
    if (cb_.on_progress) cb_.on_progress(prog_);
  }
  void emit(std::string_view s) {
    out_.text.append(s);
    if (cb_.on_text && !s.empty()) cb_.on_text(s);
  }
  OcrPass prepare(size_t first, size_t count);
  GenerationOptions options(const OcrPass& pass, size_t pi, size_t count) const;
  void absorb(GenerationResult r);
  void count_token(std::optional<Clock::time_point>& first_token, double decode_ms_before);

  OcrModel& model_;
  const OcrPages& pages_;
  const OcrOptions& opt_;
  ThreadPool& threads_;
  const OcrCallbacks& cb_;
  KVBlockPool pool_;
  Generator gen_;
  std::unique_ptr<TieredStore> store_;
  OcrResult out_;
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
  OcrPass pass = opt_.policy.rolls()
                     ? model_.prepare_rolling(pages_, first, count, static_cast<size_t>(opt_.policy.resident_pages), opt_.mode,
                                              threads_, on_encoded)
                     : model_.prepare(pages_, first, count, opt_.mode, threads_, on_encoded);
  // Kept reference KV is found by content: every page's rows are produced (encoded) now and keyed.
  if (opt_.prefix_cache_bytes > 0 && opt_.policy.reference_reusable())
    for (ReferencePart& part : pass.reference) produce_keyed(part, model_.decoder().config().hidden);
  out_.stats.encode_ms += ms_between(start, Clock::now());
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
    FOLIO_CHECK_INPUT(per_pass.size() == out_.stats.passes, "teacher forcing: the teacher run has " + std::to_string(per_pass.size()) +
                                                                " passes, this one " + std::to_string(out_.stats.passes));
    size_t at = 0;
    for (size_t k = 0; k < pi; ++k) at += static_cast<size_t>(per_pass[k]);
    const auto from = opt_.teacher->tokens.begin() + static_cast<std::ptrdiff_t>(at);
    g.teacher.assign(from, from + static_cast<std::ptrdiff_t>(per_pass[pi]));
    g.max_tokens = std::max<int64_t>(g.max_tokens, static_cast<int64_t>(g.teacher.size()));
  }
  return g;
}

void OcrRun::read_pass(size_t pi, size_t first, size_t count) {
  prog_.pass = pi + 1;
  if (pi > 0) emit("\n\n");
  OcrPass pass = prepare(first, count);
  const GenerationOptions g = options(pass, pi, count);
  StreamingDetokenizer detok(model_.tokenizer());
  const size_t text_start = out_.text.size();
  std::optional<Clock::time_point> first_token;
  const double decode_ms_before = out_.stats.decode_ms;
  const int32_t eos = model_.decoder().config().eos_id;
  int64_t pass_tokens = 0;
  auto on_token = [&](int32_t tok) {
    if (pass.write_token) emit(pass.write_token(tok));
    else if (!(g.stop_at_eos && tok == eos)) emit(detok.push(tok));
    count_token(first_token, decode_ms_before);
    // The first token comes from the prefill's logits, before any generated token is stored (and
    // before --kv-keep compresses the reference): what decoding holds is seen from the second on.
    if (++pass_tokens > 1) out_.stats.kv_bytes_decoding_max = std::max(out_.stats.kv_bytes_decoding_max, prog_.kv_bytes);
    return true;
  };
  absorb(gen_.generate(pass.reference, g, on_token));
  emit(pass.write_end ? pass.write_end() : detok.flush());
  for (OcrPage& p : fit_ocr_pages(model_.parse(std::string_view(out_.text).substr(text_start)), count, first, out_.warnings))
    out_.pages.push_back(std::move(p));
}

// A token generated: the progress figures (decode rate since the first token of this decoding).
void OcrRun::count_token(std::optional<Clock::time_point>& first_token, double decode_ms_before) {
  const auto now = Clock::now();
  if (!first_token) first_token = now;
  ++prog_.tokens;
  const double ms = decode_ms_before + ms_between(*first_token, now);
  prog_.tokens_per_s = ms > 0 ? 1000.0 * static_cast<double>(prog_.tokens) / ms : 0.0;
  prog_.kv_bytes = pool_.bytes_in_use();
  out_.stats.kv_bytes_last = prog_.kv_bytes;
  report();
}

// Every pass prepared, then decoded side by side; each pass's text is kept apart and emitted in
// pass order, a pass's as it comes once the passes before it have ended.
void OcrRun::read_side_by_side(const std::vector<std::pair<size_t, size_t>>& passes) {
  struct Run {
    OcrPass pass;
    std::optional<StreamingDetokenizer> detok;
    std::string text;
    size_t sent = 0;      // of text, emitted
    bool opened = false;  // its separator emitted: it is the pass streaming now, or was
    bool done = false;
  };
  std::vector<Run> runs(passes.size());
  std::vector<Generator::BatchItem> items;
  for (size_t k = 0; k < passes.size(); ++k) {
    runs[k].pass = prepare(passes[k].first, passes[k].second);
    runs[k].detok.emplace(model_.tokenizer());
  }
  size_t shown = 0;  // the pass whose text streams now
  auto flush = [&] {
    for (; shown < runs.size(); ++shown) {
      Run& r = runs[shown];
      prog_.pass = shown + 1;
      if (!r.opened && shown > 0) emit("\n\n");  // as one pass after another: at the pass's start
      r.opened = true;
      emit(std::string_view(r.text).substr(r.sent));
      r.sent = r.text.size();
      if (!r.done) return;
    }
  };
  std::optional<Clock::time_point> first_token;
  const double decode_ms_before = out_.stats.decode_ms;
  const int32_t eos = model_.decoder().config().eos_id;
  for (size_t k = 0; k < runs.size(); ++k) {
    GenerationOptions g = options(runs[k].pass, k, passes[k].second);
    const bool skip_eos = g.stop_at_eos;
    auto on_token = [&, k, skip_eos](int32_t tok) {
      Run& r = runs[k];
      if (r.pass.write_token) r.text += r.pass.write_token(tok);
      else if (!(skip_eos && tok == eos)) r.text += r.detok->push(tok);
      flush();
      count_token(first_token, decode_ms_before);
      return true;
    };
    auto on_done = [&, k](const GenerationResult&) {
      Run& r = runs[k];
      r.text += r.pass.write_end ? r.pass.write_end() : r.detok->flush();
      r.done = true;
      flush();
    };
    items.push_back({runs[k].pass.reference, std::move(g), on_token, on_done});
  }
  OcrStats& st = out_.stats;
  const double prefill_before = st.prefill_ms, produce_before = st.encode_ms;
  const auto start = Clock::now();
  SchedulerStats steps;
  std::vector<GenerationResult> results = gen_.generate_batch(items, static_cast<int64_t>(opt_.passes_in_flight), &steps);
  const auto end = Clock::now();
  for (size_t k = 0; k < runs.size(); ++k) {
    absorb(std::move(results[k]));
    for (OcrPage& p : fit_ocr_pages(model_.parse(runs[k].text), passes[k].second, passes[k].first, out_.warnings))
      out_.pages.push_back(std::move(p));
  }
  // The passes shared their forward passes, so their own times overlap: prefill is the time of the
  // forward passes that prefilled (no pass decodes in those), decode the rest of the batch's time
  // besides producing rows (encoding pages, counted by each pass: it happens one part at a time).
  const double total = ms_between(start, end), produce = st.encode_ms - produce_before;
  st.prefill_ms = prefill_before + steps.prefill_forward_ms;
  st.decode_ms = decode_ms_before + std::max(0.0, total - produce - steps.prefill_forward_ms);
}

void OcrRun::absorb(GenerationResult r) {
  OcrStats& st = out_.stats;
  out_.predicted.insert(out_.predicted.end(), r.predicted.begin(), r.predicted.end());
  const auto generated = static_cast<int64_t>(r.tokens.size());
  st.pass_tokens.push_back(generated);
  // Moved, not copied while generating: a long document's tokens are held once.
  if (out_.tokens.empty()) out_.tokens = std::move(r.tokens);
  else out_.tokens.insert(out_.tokens.end(), r.tokens.begin(), r.tokens.end());
  st.reference_tokens += r.reference_tokens;
  st.cached_reference_tokens += r.cached_prompt_tokens;
  st.decode_tokens += generated;
  st.kv_active_bytes_max = std::max(st.kv_active_bytes_max, r.kv_active_bytes_max);
  st.kv_offloaded_bytes_peak = std::max(st.kv_offloaded_bytes_peak, r.kv_offloaded_bytes_peak);
  st.encode_ms += r.produce_ms;
  st.prefill_ms += r.prefill_ms;
  st.decode_ms += r.decode_ms;
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
          {"decode_tokens_per_s", st.tokens_per_s},
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

OcrResult OcrRun::finish() {
  OcrStats& st = out_.stats;
  st.tokens_per_s = st.decode_ms > 0 ? 1000.0 * static_cast<double>(st.decode_tokens) / st.decode_ms : 0.0;
  st.kv_bytes_peak = pool_.peak_bytes();
  if (store_) {
    const TieredStoreStats ts = store_->stats();
    st.kv_store_acquires = ts.acquires;
    st.kv_store_cold_reads = ts.tiers[1].hits;
    st.kv_store_promotions = ts.tiers[1].promotions;
  }
  st.rss_peak_bytes = peak_rss_bytes();
  for (const OcrPage& p : out_.pages) out_.page_markdown.push_back(page_markdown(p));
  out_.markdown = document_markdown(out_.pages);
  out_.json = ocr_to_json(out_.pages, pages_.sizes());
  for (size_t i = 0; i < pages_.size() && i < out_.json["pages"].size(); ++i) {
    out_.json["pages"][i]["source"] = pages_.page(i).file;
    out_.json["pages"][i]["source_page"] = pages_.page(i).index + 1;
  }
  out_.json["model"] = model_.name();
  out_.json["mode"] = mode_name(opt_.mode);
  out_.json["stats"] = stats_json(st, opt_.policy);
  out_.json["stats"]["encoder_precision"] = model_.encoder_precision();
  if (!out_.warnings.empty()) out_.json["warnings"] = out_.warnings;
  return std::move(out_);
}

}  // namespace

OcrResult run_ocr(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, const OcrCallbacks& cb) {
  if (opt.max_tokens < 0) throw_invalid("--max-tokens must not be negative");
  const auto passes = plan_ocr_passes(model, pages, opt);
  if (opt.passes_in_flight < 1) throw_invalid("--passes-in-flight must be at least 1");
  OcrRun run(model, pages, opt, threads, cb, passes.size());
  if (opt.passes_in_flight > 1 && passes.size() > 1) {
    run.read_side_by_side(passes);
  } else {
    for (size_t pi = 0; pi < passes.size(); ++pi) run.read_pass(pi, passes[pi].first, passes[pi].second);
  }
  return run.finish();
}

}  // namespace folio
