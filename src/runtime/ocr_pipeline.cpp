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

OcrResult run_ocr(OcrModel& model, const OcrPages& pages, const OcrOptions& opt, ThreadPool& threads, const OcrCallbacks& cb) {
  if (opt.max_tokens < 0) throw_invalid("--max-tokens must not be negative");
  const auto passes = plan_ocr_passes(model, pages, opt);
  Decoder& dec = model.decoder();
  const ModelConfig& cfg = dec.config();
  KVBlockPool pool(opt.kv_types ? dec.kv_layout(*opt.kv_types) : dec.kv_layout(opt.kv_dtype), opt.kv_budget);
  Generator gen(dec, pool, threads);
  std::unique_ptr<TieredStore> store;
  if (!opt.kv_offload_dir.empty())
    store = std::make_unique<TieredStore>(std::make_unique<RamTier>(opt.kv_hot_bytes),
                                          std::make_unique<FileTier>(opt.kv_offload_dir, opt.kv_cold_bytes));

  OcrResult out;
  OcrStats& st = out.stats;
  st.pages = pages.size();
  st.passes = passes.size();
  OcrProgress prog;
  prog.pages_total = pages.size();
  prog.passes = passes.size();
  auto report = [&] {
    if (cb.on_progress) cb.on_progress(prog);
  };
  auto emit = [&](std::string_view s) {
    out.text.append(s);
    if (cb.on_text && !s.empty()) cb.on_text(s);
  };

  for (size_t pi = 0; pi < passes.size(); ++pi) {
    const auto [first, count] = passes[pi];
    prog.pass = pi + 1;
    if (pi > 0) emit("\n\n");
    // Models that read their pages while preparing (the mini model) spend their encoding time here;
    // lazy ones (Unlimited-OCR) spend it during prefill (GenerationResult::produce_ms).
    const auto prepare_start = Clock::now();
    auto on_encoded = [&](size_t, double) {
      ++prog.pages_encoded;
      prog.kv_bytes = pool.bytes_in_use();
      report();
    };
    OcrPass pass = opt.policy.rolls()
                       ? model.prepare_rolling(pages, first, count, static_cast<size_t>(opt.policy.resident_pages), opt.mode,
                                               threads, on_encoded)
                       : model.prepare(pages, first, count, opt.mode, threads, on_encoded);
    st.encode_ms += ms_between(prepare_start, Clock::now());
    GenerationOptions g = pass.generation;  // copies the hooks: they share the pass's state
    g.policy = opt.policy;
    g.prefill_chunk = opt.prefill_chunk;
    g.reference_store = store.get();
    // By default the model's bound (the whole context for Unlimited-OCR): the generator stops at EOS.
    g.max_tokens = opt.max_tokens > 0 ? opt.max_tokens : model.max_output_tokens(count);
    if (opt.no_repeat_ngram) g.no_repeat_ngram = *opt.no_repeat_ngram;
    if (opt.no_repeat_window) g.no_repeat_window = *opt.no_repeat_window;

    StreamingDetokenizer detok(model.tokenizer());
    const size_t text_start = out.text.size();
    std::optional<Clock::time_point> first_token;
    const double decode_ms_before = st.decode_ms;
    auto on_token = [&](int32_t tok) {
      const auto now = Clock::now();
      if (!first_token) first_token = now;
      ++prog.tokens;
      if (pass.write_token) emit(pass.write_token(tok));
      else if (!(g.stop_at_eos && tok == cfg.eos_id)) emit(detok.push(tok));
      const double ms = decode_ms_before + ms_between(*first_token, now);
      prog.tokens_per_s = ms > 0 ? 1000.0 * static_cast<double>(prog.tokens) / ms : 0.0;
      prog.kv_bytes = pool.bytes_in_use();
      st.kv_bytes_last = prog.kv_bytes;
      report();
      return true;
    };
    if (opt.teacher) {
      FOLIO_CHECK_INPUT(opt.teacher->stats.pass_tokens.size() == passes.size(),
                        "teacher forcing: the teacher run has " + std::to_string(opt.teacher->stats.pass_tokens.size()) +
                            " passes, this one " + std::to_string(passes.size()));
      size_t at = 0;
      for (size_t k = 0; k < pi; ++k) at += static_cast<size_t>(opt.teacher->stats.pass_tokens[k]);
      g.teacher = std::span<const int32_t>(opt.teacher->tokens).subspan(at, static_cast<size_t>(opt.teacher->stats.pass_tokens[pi]));
      g.max_tokens = std::max<int64_t>(g.max_tokens, static_cast<int64_t>(g.teacher.size()));
    }
    GenerationResult r = gen.generate(pass.reference, g, on_token);
    out.predicted.insert(out.predicted.end(), r.predicted.begin(), r.predicted.end());
    const auto generated = static_cast<int64_t>(r.tokens.size());
    st.pass_tokens.push_back(generated);
    // Moved, not copied while generating: a long document's tokens are held once.
    if (out.tokens.empty()) out.tokens = std::move(r.tokens);
    else out.tokens.insert(out.tokens.end(), r.tokens.begin(), r.tokens.end());
    emit(pass.write_end ? pass.write_end() : detok.flush());
    st.reference_tokens += r.reference_tokens;
    st.decode_tokens += generated;
    st.kv_active_bytes_max = std::max(st.kv_active_bytes_max, r.kv_active_bytes_max);
    st.kv_offloaded_bytes_peak = std::max(st.kv_offloaded_bytes_peak, r.kv_offloaded_bytes_peak);
    st.encode_ms += r.produce_ms;
    st.prefill_ms += r.prefill_ms;
    st.decode_ms += r.decode_ms;
    st.stop_reasons.push_back(r.stop_reason);
    for (OcrPage& p : fit_ocr_pages(model.parse(std::string_view(out.text).substr(text_start)), count, first, out.warnings))
      out.pages.push_back(std::move(p));
  }
  st.tokens_per_s = st.decode_ms > 0 ? 1000.0 * static_cast<double>(st.decode_tokens) / st.decode_ms : 0.0;
  st.kv_bytes_peak = pool.peak_bytes();
  if (store) {
    const TieredStoreStats ts = store->stats();
    st.kv_store_acquires = ts.acquires;
    st.kv_store_cold_reads = ts.tiers[1].hits;
    st.kv_store_promotions = ts.tiers[1].promotions;
  }
  st.rss_peak_bytes = peak_rss_bytes();

  for (const OcrPage& p : out.pages) out.page_markdown.push_back(page_markdown(p));
  out.markdown = document_markdown(out.pages);
  const std::vector<PageSize> sizes = pages.sizes();
  out.json = ocr_to_json(out.pages, sizes);
  for (size_t i = 0; i < pages.size() && i < out.json["pages"].size(); ++i) {
    out.json["pages"][i]["source"] = pages.page(i).file;
    out.json["pages"][i]["source_page"] = pages.page(i).index + 1;
  }
  out.json["model"] = model.name();
  out.json["mode"] = mode_name(opt.mode);
  out.json["stats"] = {{"pages", st.pages},
                       {"passes", st.passes},
                       {"policy", opt.policy.name()},
                       {"window", opt.policy.window},
                       {"reference_tokens", st.reference_tokens},
                       {"decode_tokens", st.decode_tokens},
                       {"encode_ms", st.encode_ms},
                       {"prefill_ms", st.prefill_ms},
                       {"decode_ms", st.decode_ms},
                       {"decode_tokens_per_s", st.tokens_per_s},
                       {"kv_bytes_last", st.kv_bytes_last},
                       {"kv_bytes_peak", st.kv_bytes_peak},
                       {"kv_offloaded_bytes_peak", st.kv_offloaded_bytes_peak},
                       {"kv_store_acquires", st.kv_store_acquires},
                       {"kv_store_cold_reads", st.kv_store_cold_reads},
                       {"kv_store_promotions", st.kv_store_promotions},
                       {"rss_peak_bytes", st.rss_peak_bytes},
                       {"stop_reasons", st.stop_reasons}};
  if (!out.warnings.empty()) out.json["warnings"] = out.warnings;
  return out;
}

}  // namespace folio
