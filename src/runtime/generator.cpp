#include "runtime/generator.h"

#include <algorithm>
#include <deque>
#include <memory>

#include "core/error.h"
#include "kv/sequence_kv.h"
#include "text/no_repeat_ngram.h"

namespace folio {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

ReferencePart ReferencePart::tokens(std::vector<int32_t> ids) {
  ReferencePart p;
  p.ids = std::move(ids);
  return p;
}

ReferencePart ReferencePart::rows(std::vector<int32_t> ids, std::vector<float> rows) {
  // std::function needs a copyable target; share the rows instead of copying them per call.
  auto shared = std::make_shared<std::vector<float>>(std::move(rows));
  return lazy(std::move(ids), [shared] { return *shared; });
}

ReferencePart ReferencePart::lazy(std::vector<int32_t> ids, std::function<std::vector<float>()> produce) {
  ReferencePart p;
  p.ids = std::move(ids);
  p.embeddings = std::move(produce);
  return p;
}

void begin_reference_part(SequenceKV& kv, const ReferencePart& part) {
  kv.begin_segment();
  const auto n = static_cast<int64_t>(part.ids.size());
  for (int64_t off : part.unit_starts)
    if (off > 0 && off < n) kv.begin_unit(kv.length() + off);
}

std::vector<size_t> focus_segments(std::span<const ReferencePart> reference, size_t page_now, const KVPolicy& policy) {
  std::vector<size_t> out;
  size_t page = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!reference[i].page) continue;
    if (page >= page_now && page < page_now + static_cast<size_t>(policy.focus_pages)) out.push_back(i);
    ++page;
  }
  return out;
}

GenerationResult Generator::generate(const std::vector<int32_t>& prompt, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  const ReferencePart part = ReferencePart::tokens(prompt);
  return generate(std::span<const ReferencePart>(&part, 1), opt, on_token);
}

GenerationResult Generator::generate(std::span<const ReferencePart> reference, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  const ModelConfig& cfg = dec_.config();
  const int64_t H = cfg.hidden;
  // The n-gram guard sees reference ids + output, as the official Unlimited-OCR processor does
  // (image positions hold the placeholder id there).
  std::vector<int32_t> history;
  for (const ReferencePart& p : reference) history.insert(history.end(), p.ids.begin(), p.ids.end());
  if (history.empty()) throw_invalid("the prompt is empty: at least one token is needed");
  for (size_t i = 0; i < reference.size(); ++i)
    if (reference[i].ids.empty()) throw_invalid("reference part " + std::to_string(i + 1) + " is empty");
  if (static_cast<int64_t>(history.size()) >= cfg.max_positions)
    throw_invalid("the prompt has " + std::to_string(history.size()) + " tokens but the model's context is " +
                  std::to_string(cfg.max_positions) + " (room is needed for at least one generated token)");
  if (opt.max_tokens < 0) throw_invalid("max tokens must not be negative");
  if (opt.prefill_chunk < 1) throw_invalid("prefill chunk must be at least 1 token");
  if (opt.rolling && !opt.policy.rolls())
    throw_invalid("a rolling reference needs the rolling KV policy, not " + opt.policy.name());
  if (opt.policy.window < 1) throw_invalid("window must be at least 1, got " + std::to_string(opt.policy.window));
  std::optional<NoRepeatNGram> guard;
  if (opt.no_repeat_ngram > 0) guard.emplace(opt.no_repeat_ngram, opt.no_repeat_window);

  GenerationResult res;
  res.reference_tokens = static_cast<int64_t>(history.size());
  SequenceKV kv(pool_, next_id_++, opt.policy);
  if (opt.reference_store) kv.offload_reference(opt.reference_store);
  std::vector<float> logits(static_cast<size_t>(cfg.vocab));
  // Prefills one part as a new KV segment (what sparse selects within and rolling drops).
  auto prefill_part = [&](const ReferencePart& part, size_t pi) {
    const int64_t n = static_cast<int64_t>(part.ids.size());
    std::vector<float> rows;
    if (part.is_embedding()) {
      auto t0 = std::chrono::steady_clock::now();
      rows = part.embeddings();
      res.produce_ms += ms_since(t0);
      if (static_cast<int64_t>(rows.size()) != n * H)
        throw Error(Error::Kind::Internal, "reference part " + std::to_string(pi + 1) + " produced " + std::to_string(rows.size()) +
                                               " values, expected " + std::to_string(n) + " rows of " + std::to_string(H));
    }
    auto t0 = std::chrono::steady_clock::now();
    begin_reference_part(kv, part);
    for (int64_t i = 0; i < n; i += opt.prefill_chunk) {
      const int64_t c = std::min(n - i, opt.prefill_chunk);
      Decoder::Input in;
      in.kv = &kv;
      in.reference = true;
      if (part.is_embedding()) {
        in.embeddings = rows.data() + i * H;
        in.n_embeddings = c;
      } else {
        in.tokens = std::span<const int32_t>(part.ids.data() + i, static_cast<size_t>(c));
      }
      dec_.forward({&in, 1}, logits.data(), threads_);
    }
    res.prefill_ms += ms_since(t0);
    return kv.segment_count() - 1;
  };
  std::deque<size_t> resident_pages;  // rolling: KV segments of the pages in the reference, oldest first
  for (size_t pi = 0; pi < reference.size(); ++pi) {
    const size_t seg = prefill_part(reference[pi], pi);
    if (reference[pi].page) resident_pages.push_back(seg);
  }
  res.kv_bytes_peak = kv.bytes();
  res.kv_offloaded_bytes_peak = kv.offloaded_bytes();
  const double before_decode_ms = res.prefill_ms + res.produce_ms;

  // sparse: the pages read whole, from the one the decoder is on.
  size_t page_now = 0;
  auto focus = [&] {
    if (opt.policy.focuses_pages() && opt.page_separator >= 0) kv.set_focus(focus_segments(reference, page_now, opt.policy));
  };
  focus();
  Sampler sampler(opt.sampling);
  std::vector<float> row(opt.embed_token ? static_cast<size_t>(H) : 0);
  auto t0 = std::chrono::steady_clock::now();
  res.stop_reason = "length";
  for (int64_t step = 0; step < opt.max_tokens; ++step) {
    if (opt.on_logits) opt.on_logits(logits);
    if (opt.constrain) opt.constrain(logits);
    if (guard) guard->apply(history, logits);
    int32_t tok = sampler.sample(logits);
    if (!opt.teacher.empty()) {
      res.predicted.push_back(tok);
      tok = opt.teacher[static_cast<size_t>(step)];
    }
    res.tokens.push_back(tok);
    if (guard) {
      history.push_back(tok);
      guard->trim(history);  // a long document must not keep every token for the guard
    }
    bool go_on = !on_token || on_token(tok);
    if (opt.stop_at_eos && tok == cfg.eos_id) {
      res.stop_reason = "eos";
      break;
    }
    if (!go_on) {
      res.stop_reason = "stopped";
      break;
    }
    if (step + 1 == opt.max_tokens) break;
    if (!opt.teacher.empty() && static_cast<size_t>(step + 1) == opt.teacher.size()) break;
    if (tok == opt.page_separator) {
      ++page_now;
      focus();
    }
    if (opt.rolling && tok == opt.rolling->separator) {
      // The decoder has finished the oldest resident page: it leaves, the next one enters.
      if (!resident_pages.empty()) {
        kv.drop_segment(resident_pages.front());
        resident_pages.pop_front();
      }
      std::optional<ReferencePart> page;
      if (opt.rolling->next_page) {
        const auto t1 = std::chrono::steady_clock::now();
        page = opt.rolling->next_page();  // reads (encodes) the page
        res.produce_ms += ms_since(t1);
      }
      if (page) {
        if (page->ids.empty()) throw Error(Error::Kind::Internal, "rolling reference: an empty page entered");
        resident_pages.push_back(prefill_part(*page, reference.size() + resident_pages.size()));
      }
    }
    if (kv.length() + 1 > cfg.max_positions) {
      res.stop_reason = "context";
      break;
    }
    Decoder::Input in;
    in.kv = &kv;
    if (opt.embed_token) {
      opt.embed_token(tok, row.data());
      in.embeddings = row.data();
      in.n_embeddings = 1;
    } else {
      in.tokens = std::span<const int32_t>(&res.tokens.back(), 1);
    }
    dec_.forward({&in, 1}, logits.data(), threads_);
    res.kv_bytes_peak = std::max(res.kv_bytes_peak, kv.bytes());
    res.kv_active_bytes_max = std::max(res.kv_active_bytes_max, kv.active_bytes(kv.length() - 1));
    res.kv_offloaded_bytes_peak = std::max(res.kv_offloaded_bytes_peak, kv.offloaded_bytes());
  }
  // Pages entering a rolling reference count as prefill and produce time, not decode time.
  res.decode_ms = ms_since(t0) - (res.prefill_ms + res.produce_ms - before_decode_ms);
  res.reference_tokens = kv.reference_length();
  return res;
}

}  // namespace folio
