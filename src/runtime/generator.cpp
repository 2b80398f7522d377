#include "runtime/generator.h"

#include <algorithm>

#include "core/error.h"
#include "kv/sequence_kv.h"
#include "text/no_repeat_ngram.h"

namespace folio {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerationResult Generator::generate(const std::vector<int32_t>& prompt, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  const ModelConfig& cfg = dec_.config();
  if (prompt.empty()) throw_invalid("the prompt is empty: at least one token is needed");
  if (static_cast<int64_t>(prompt.size()) >= cfg.max_positions)
    throw_invalid("the prompt has " + std::to_string(prompt.size()) + " tokens but the model's context is " +
                  std::to_string(cfg.max_positions) + " (room is needed for at least one generated token)");
  if (opt.max_tokens < 0) throw_invalid("max tokens must not be negative");
  if (opt.prefill_chunk < 1) throw_invalid("prefill chunk must be at least 1 token");
  if (opt.policy.window < 1) throw_invalid("window must be at least 1, got " + std::to_string(opt.policy.window));
  std::optional<NoRepeatNGram> guard;
  if (opt.no_repeat_ngram > 0) guard.emplace(opt.no_repeat_ngram, opt.no_repeat_window);

  GenerationResult res;
  SequenceKV kv(pool_, next_id_++, opt.policy);
  std::vector<float> logits(static_cast<size_t>(cfg.vocab));
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompt.size(); i += static_cast<size_t>(opt.prefill_chunk)) {
    size_t n = std::min(prompt.size() - i, static_cast<size_t>(opt.prefill_chunk));
    Decoder::Input in;
    in.kv = &kv;
    in.tokens = std::span<const int32_t>(prompt.data() + i, n);
    in.reference = true;
    dec_.forward({&in, 1}, logits.data(), threads_);
  }
  res.prefill_ms = ms_since(t0);
  res.kv_bytes_peak = kv.bytes();

  Sampler sampler(opt.sampling);
  // The n-gram guard sees prompt + output, as the official Unlimited-OCR processor does.
  std::vector<int32_t> history = prompt;
  t0 = std::chrono::steady_clock::now();
  res.stop_reason = "length";
  for (int64_t step = 0; step < opt.max_tokens; ++step) {
    if (guard) guard->apply(history, logits);
    int32_t tok = sampler.sample(logits);
    res.tokens.push_back(tok);
    history.push_back(tok);
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
    if (kv.length() + 1 > cfg.max_positions) {
      res.stop_reason = "context";
      break;
    }
    Decoder::Input in;
    in.kv = &kv;
    in.tokens = std::span<const int32_t>(&res.tokens.back(), 1);
    dec_.forward({&in, 1}, logits.data(), threads_);
    res.kv_bytes_peak = std::max(res.kv_bytes_peak, kv.bytes());
  }
  res.decode_ms = ms_since(t0);
  return res;
}

}  // namespace folio
