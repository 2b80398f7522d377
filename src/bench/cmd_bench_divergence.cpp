// folio bench divergence: what a KV policy or storage type does to the logits, on any decoder (the
// full-size random-weight Unlimited-OCR decoder included), against f32 KV.
//
// A reference of --ref-tokens random ids is prefilled; the baseline (--baseline-policy, f32 KV)
// decodes --gen-tokens greedily and records the logits of every step; the run (--policy,
// --kv-dtype...) is then teacher-forced with the baseline's tokens, so each step compares logits
// over the same context. Reported: mean and max KL(baseline || run) in nats, top-1 agreement (the
// run's argmax is the baseline's token), mean relative L2 error of the logits and the largest
// absolute logit difference. With --weights SCHEME the run's decoder has its linears re-stored in
// that block format (the baseline keeps the checkpoint's): the accuracy cost of a weight format. With
// --prefill-precision bf16 the run's prefill multiplies in bf16 (the baseline's in f32).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench/json_output.h"
#include "cmdline/commands.h"
#include "cmdline/kv_options.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/quantized_weights.h"
#include "runtime/generator.h"
#include "runtime/loaded_model.h"

namespace folio::cli {

namespace {

struct DivergenceArgs {
  std::string model, json, baseline_policy = "rswa", weights, prefill_precision = "f32";
  PolicyOptions policy;
  KVOptions kv;
  int64_t ref_tokens = 1024, gen_tokens = 64;
  int threads = 0;
  uint64_t seed = 1;
};

// log-softmax in double.
std::vector<double> log_softmax(std::span<const float> x) {
  const double m = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (float v : x) s += std::exp(v - m);
  const double lse = m + std::log(s);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - lse;
  return out;
}

// How far a run's logits stray from the baseline's, step by step (the run teacher-forced on the
// baseline's tokens).
struct Divergence {
  double kl_sum = 0, kl_max = 0, rel_sum = 0, abs_max = 0;
  int64_t agree = 0;
  size_t steps = 0;

  Divergence(const std::vector<std::vector<float>>& base_logits, const std::vector<std::vector<float>>& run_logits,
             const GenerationResult& base, const GenerationResult& run) {
    steps = std::min(base_logits.size(), run_logits.size());
    for (size_t s = 0; s < steps; ++s) {
      const std::vector<float>& b = base_logits[s];
      const std::vector<float>& r = run_logits[s];
      const std::vector<double> lb = log_softmax(b), lr = log_softmax(r);
      double kl = 0, diff2 = 0, norm2 = 0;
      for (size_t i = 0; i < b.size(); ++i) {
        kl += std::exp(lb[i]) * (lb[i] - lr[i]);
        diff2 += (double(r[i]) - b[i]) * (double(r[i]) - b[i]);
        norm2 += double(b[i]) * b[i];
        abs_max = std::max(abs_max, std::fabs(double(r[i]) - b[i]));
      }
      kl_sum += kl;
      kl_max = std::max(kl_max, kl);
      rel_sum += norm2 > 0 ? std::sqrt(diff2 / norm2) : 0;
      agree += run.predicted[s] == base.tokens[s];
    }
  }
  double n() const { return static_cast<double>(std::max<size_t>(steps, 1)); }
};

int run_divergence(const DivergenceArgs& a) {
  const JsonOutput json_out(a.json);
  if (a.ref_tokens < 1 || a.gen_tokens < 1) throw_invalid("--ref-tokens and --gen-tokens must be at least 1");
  LoadedModel m = load_model(a.model, false);
  Decoder& dec = *m.decoder;
  const ModelConfig& cfg = dec.config();
  if (a.ref_tokens + a.gen_tokens >= cfg.max_positions) throw_invalid("--ref-tokens + --gen-tokens exceed the model's context");
  ThreadPool threads(a.threads);
  std::mt19937_64 rng(a.seed);
  std::vector<int32_t> prompt(static_cast<size_t>(a.ref_tokens));
  for (auto& t : prompt) t = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(cfg.vocab - 1));

  // The run's decoder: the same checkpoint, its linears re-stored under --weights.
  std::unique_ptr<LoadedModel> restored;
  if (!a.weights.empty()) restored = std::make_unique<LoadedModel>(load_model(a.model, false, a.weights));
  Decoder& run_dec = restored ? *restored->decoder : dec;
  auto generate = [&](Decoder& d, const KVPolicy& policy, const KVTypes& types, std::span<const int32_t> teacher,
                      std::vector<std::vector<float>>& logits) {
    KVBlockPool pool(d.kv_layout(types), 0);
    Generator gen(d, pool, threads);
    GenerationOptions o;
    o.policy = policy;
    o.max_tokens = a.gen_tokens;
    o.stop_at_eos = false;
    o.teacher.assign(teacher.begin(), teacher.end());
    o.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
    return gen.generate(prompt, o);
  };
  KVPolicy run_policy = a.policy.policy();
  KVPolicy base_policy = run_policy;
  base_policy.kind = KVPolicy::parse(a.baseline_policy, run_policy.window).kind;
  base_policy.keep = 1.0;  // the baseline's reference is never compressed
  std::vector<std::vector<float>> base_logits, run_logits;
  const GenerationResult base = generate(dec, base_policy, KVTypes::uniform(KVDType::F32), {}, base_logits);
  // Set after the baseline ran: without --weights the run's decoder is the baseline's.
  run_dec.set_prefill_precision(kernels::gemm_precision_from_name(a.prefill_precision, "--prefill-precision"));
  const GenerationResult run = generate(run_dec, run_policy, a.kv.types(), base.tokens, run_logits);
  const Divergence d(base_logits, run_logits, base, run);
  const double n = d.n();
  nlohmann::json j = {{"suite", "divergence"},
                      {"model", a.model},
                      {"policy", run_policy.name()},
                      {"sparse_top_k", run_policy.top_k},
                      {"window", run_policy.window},
                      {"kv_keep", run_policy.keep},
                      {"kv_observe", run_policy.observe},
                      {"kv_dtype", a.kv.types().name()},
                      {"baseline_policy", base_policy.name()},
                      {"baseline_kv_dtype", "f32"},
                      {"weights", a.weights.empty() ? "checkpoint" : a.weights},
                      {"baseline_weights", "checkpoint"},
                      {"prefill_precision", kernels::gemm_precision_name(run_dec.prefill_precision())},
                      {"baseline_prefill_precision", "f32"},
                      {"ref_tokens", a.ref_tokens},
                      {"gen_tokens", a.gen_tokens},
                      {"threads", threads.size()},
                      {"steps", d.steps},
                      {"kl_mean", d.kl_sum / n},
                      {"kl_max", d.kl_max},
                      {"top1_agreement", static_cast<double>(d.agree) / n},
                      {"logits_rel_l2_mean", d.rel_sum / n},
                      {"logits_abs_diff_max", d.abs_max},
                      {"kv_bytes_peak", run.kv_bytes_peak},
                      {"kv_bytes_final", run.kv_bytes_final},
                      {"baseline_kv_bytes_final", base.kv_bytes_final},
                      {"baseline_kv_bytes_peak", base.kv_bytes_peak},
                      {"kv_active_bytes_max", run.kv_active_bytes_max},
                      {"baseline_kv_active_bytes_max", base.kv_active_bytes_max}};
  json_out.write(j);
  std::printf("divergence %s/%s vs %s/f32 over %zu steps: KL mean %.3g max %.3g nats, top-1 agreement %.4f, logits rel. L2 %.3g, KV %zu vs %zu bytes\n",
              run_policy.name().c_str(), a.kv.types().name().c_str(), base_policy.name().c_str(), d.steps, d.kl_sum / n, d.kl_max,
              static_cast<double>(d.agree) / n, d.rel_sum / n, run.kv_bytes_peak, base.kv_bytes_peak);
  return 0;
}

}  // namespace

SubRunner add_bench_divergence(CLI::App& bench) {
  auto a = std::make_shared<DivergenceArgs>();
  CLI::App* c = bench.add_subcommand("divergence", "Logit divergence of a KV policy / storage type against f32 KV, teacher-forced");
  c->add_option("--model", a->model, "Checkpoint directory or .gguf file")->required();
  add_policy_options(*c, a->policy);
  add_kv_options(*c, a->kv);
  c->add_option("--weights", a->weights,
                std::string("The run's decoder linears re-stored at load (the baseline keeps the checkpoint's): ") +
                    weight_scheme_names());
  c->add_option("--prefill-precision", a->prefill_precision,
                "The run's prefill products: f32, bf16 or auto (bf16 where the CPU has AVX512-BF16); the baseline's are f32")
      ->capture_default_str();
  c->add_option("--baseline-policy", a->baseline_policy, "Baseline KV policy (its KV is f32)")->capture_default_str();
  c->add_option("--ref-tokens", a->ref_tokens, "Reference tokens (random ids)")->capture_default_str();
  c->add_option("--gen-tokens", a->gen_tokens, "Decoded tokens compared")->capture_default_str();
  c->add_option("--threads", a->threads, "Threads (0 = one per core)")->capture_default_str();
  c->add_option("--seed", a->seed, "Seed of the random reference")->capture_default_str();
  c->add_option("--json", a->json, "Output JSON file")->required();
  return {c, [a]() { return run_divergence(*a); }};
}

}  // namespace folio::cli
