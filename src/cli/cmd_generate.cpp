#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cmdline/commands.h"
#include "model/quantized_weights.h"
#include "core/error.h"
#include "cmdline/kv_options.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "runtime/generator.h"
#include "runtime/loaded_model.h"

namespace folio::cli {

namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_ids, weights;
  KVOptions kv;
  PolicyOptions policy;
  int64_t max_tokens = 256, kv_budget = 0;
  int threads = 0, no_repeat_ngram = 0, no_repeat_window = 128;
  float temperature = 0.f, top_p = 1.f;
  int top_k = 0;
  uint64_t seed = 0;
  bool no_bos = false, show_stats = false;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      throw_invalid("--prompt-ids: '" + item + "' is not an integer token id");
    }
  }
  return ids;
}

}  // namespace

Runner add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  app.add_option("--model", a->model, "Checkpoint directory (config.json + safetensors + tokenizer.json) or .gguf file")->required();
  app.add_option("--weights", a->weights,
                 std::string("Re-store the decoder's linears at load: ") + weight_scheme_names());
  app.add_option("--prompt", a->prompt, "Prompt text");
  app.add_option("--prompt-ids", a->prompt_ids, "Prompt as comma-separated token ids (instead of --prompt)");
  add_policy_options(app, a->policy);
  app.add_option("--max-tokens", a->max_tokens, "Generated tokens at most")->capture_default_str();
  add_kv_options(app, a->kv);
  app.add_option("--kv-budget", a->kv_budget, "KV pool capacity in bytes (0 = unlimited)")->capture_default_str();
  app.add_option("--threads", a->threads, "Worker threads (0 = one per core)")->capture_default_str();
  app.add_option("--temperature", a->temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-k", a->top_k, "Sample among the k most likely tokens (0 = all)")->capture_default_str();
  app.add_option("--top-p", a->top_p, "Nucleus sampling mass")->capture_default_str();
  app.add_option("--seed", a->seed, "Sampling seed")->capture_default_str();
  app.add_option("--no-repeat-ngram", a->no_repeat_ngram, "Ban tokens that repeat an n-gram (0 = off)")->capture_default_str();
  app.add_option("--no-repeat-window", a->no_repeat_window, "Tokens the n-gram guard looks back over")->capture_default_str();
  app.add_flag("--no-bos", a->no_bos, "Do not prepend the BOS token");
  app.add_flag("--stats", a->show_stats, "Print timing and KV statistics to stderr");
  return [a]() -> int {
    auto policy = a->policy.policy();
    const KVTypes kv_types = a->kv.types();
    if (a->prompt.empty() && a->prompt_ids.empty()) throw_invalid("the prompt is empty: give --prompt TEXT or --prompt-ids");
    LoadedModel m = load_model(a->model, a->prompt_ids.empty(), a->weights);
    std::vector<int32_t> prompt;
    if (!a->no_bos && m.config.bos_id >= 0) prompt.push_back(m.config.bos_id);
    if (!a->prompt_ids.empty()) {
      auto ids = parse_ids(a->prompt_ids);
      prompt.insert(prompt.end(), ids.begin(), ids.end());
    } else {
      auto ids = m.tokenizer->encode(a->prompt);
      prompt.insert(prompt.end(), ids.begin(), ids.end());
    }
    ThreadPool threads(a->threads);
    KVBlockPool pool(m.decoder->kv_layout(kv_types), static_cast<size_t>(a->kv_budget));
    Generator gen(*m.decoder, pool, threads);
    GenerationOptions opt;
    opt.policy = policy;
    opt.max_tokens = a->max_tokens;
    opt.sampling = {a->temperature, a->top_k, a->top_p, a->seed};
    opt.no_repeat_ngram = a->no_repeat_ngram;
    opt.no_repeat_window = a->no_repeat_window;
    std::unique_ptr<StreamingDetokenizer> detok;
    // The output continues the prompt: decoded after its last token, so a first word keeps its space.
    if (m.tokenizer)
      detok = std::make_unique<StreamingDetokenizer>(*m.tokenizer, prompt.empty() ? std::vector<int32_t>{} : std::vector<int32_t>{prompt.back()});
    auto res = gen.generate(prompt, opt, [&](int32_t tok) {
      if (tok == m.config.eos_id) return true;
      // Control tokens (<s>, </s>, special added tokens) are markup, not text: left out, as
      // llama.cpp's programs do.
      if (detok && m.tokenizer->is_control(tok)) return true;
      if (detok) {
        std::string s = detok->push(tok);
        std::fwrite(s.data(), 1, s.size(), stdout);
      } else {
        std::printf("%d ", tok);
      }
      std::fflush(stdout);
      return true;
    });
    if (detok) {
      std::string s = detok->flush();
      std::fwrite(s.data(), 1, s.size(), stdout);
    }
    std::printf("\n");
    if (a->show_stats) {
      double n = static_cast<double>(res.tokens.size());
      std::fprintf(stderr, "prompt %zu tokens, prefill %.1f ms; generated %zu tokens (%s), %.2f tokens/s; KV peak %zu bytes\n",
                   prompt.size(), res.prefill_ms, res.tokens.size(), std::string(res.stop_reason.name()).c_str(),
                   res.decode_ms > 0 ? n * 1000.0 / res.decode_ms : 0.0, res.kv_bytes_peak);
    }
    return 0;
  };
}

}  // namespace folio::cli
