// Same request, same answer: a request's logits are the same bits whether it runs alone or among
// many (SchedulerOptions::batch_invariant, the default). A tiny Unlimited-OCR decoder (MoE layers,
// 8 experts, top 3) in bf16, Q8_0 and Q4_K_M weights, with the scheduler's production settings
// (prefill chunks of 256, sgemm from 20 rows, two threads): prompts longer than a chunk (so prefill
// chunks share steps with other sequences' decode rows) and 24 requests at once. Each request's
// every logits row is hashed; alone and in the crowd must hash alike. The same crowd with
// batch_invariant off differs (the test can fail). Weights and KV storage and policy vary by case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "kv/kv_dtype.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "runtime/scheduler.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

uint64_t fnv(std::span<const float> row, uint64_t h) {
  const auto* p = reinterpret_cast<const unsigned char*>(row.data());
  for (size_t i = 0; i < row.size_bytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct Case {
  const char* weights;  // "" (bf16 as written), "q8_0" or "q4_k_m"
  const char* kv;
  const char* policy;
};

struct Outcome {
  std::vector<int32_t> tokens;
  uint64_t logits_hash = 1469598103934665603ull;
};

class BatchInvarianceTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("folio_batch_invariance_" + std::to_string(getpid())));
    write_random_checkpoint(preset_config("unlimited-ocr-decoder", "tiny-k"), dir_->string(), 5, DType::BF16);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  static std::vector<int32_t> prompt(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> p{0};
    for (int i = 1; i < n; ++i) p.push_back(2 + static_cast<int32_t>(rng() % 500));
    return p;
  }

  // Runs `prompts` (request i gets prompts[i]) in one synchronous scheduler; outcomes by index.
  static std::vector<Outcome> run(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts, bool invariant,
                                  int64_t max_batch) {
    ThreadPool threads(2);
    KVBlockPool pool(dec.kv_layout(parse_kv_types(GetParam().kv)), 0);
    SchedulerOptions so;
    so.policy = KVPolicy::parse(GetParam().policy, 128);
    so.max_batch = max_batch;
    so.synchronous = true;
    so.batch_invariant = invariant;
    Scheduler s(dec, pool, threads, so);
    std::vector<Outcome> out(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      SequenceRequest r;
      r.prompt = prompts[i];
      r.max_tokens = 24;
      r.stop_at_eos = false;
      r.on_logits = [&out, i](std::span<const float> row) { out[i].logits_hash = fnv(row, out[i].logits_hash); };
      r.on_token = [&out, i](int32_t t) { out[i].tokens.push_back(t); };
      EXPECT_TRUE(s.submit(std::move(r)).accepted());
    }
    s.run_until_idle();
    return out;
  }

  static fs::path* dir_;
};
fs::path* BatchInvarianceTest::dir_ = nullptr;

TEST_P(BatchInvarianceTest, TwentyFourRequestsGetTheirAloneLogits) {
  LoadedModel model = load_model(dir_->string(), false, GetParam().weights);
  Decoder& dec = *model.decoder;
  // Six distinct prompts of 70-600 tokens (over one and two chunks, over attention's causal-run
  // minimum), four copies each, interleaved so copies meet every kind of neighbour.
  std::vector<std::vector<int32_t>> distinct, crowd;
  for (int i = 0; i < 6; ++i) distinct.push_back(prompt(70 + 105 * i, 40 + static_cast<uint32_t>(i)));
  for (int copy = 0; copy < 4; ++copy)
    for (const auto& p : distinct) crowd.push_back(p);
  std::vector<Outcome> alone;
  for (const auto& p : distinct) alone.push_back(run(dec, {p}, true, 24)[0]);
  const std::vector<Outcome> together = run(dec, crowd, true, 24);
  for (size_t i = 0; i < crowd.size(); ++i) {
    EXPECT_EQ(together[i].tokens, alone[i % 6].tokens) << "request " << i;
    EXPECT_EQ(together[i].logits_hash, alone[i % 6].logits_hash) << "request " << i << ": logits differ in some bit";
  }
  // The one-pass-per-step schedule mixes rows: some request's logits move.
  const std::vector<Outcome> mixed = run(dec, crowd, false, 24);
  int moved = 0;
  for (size_t i = 0; i < crowd.size(); ++i) moved += mixed[i].logits_hash != alone[i % 6].logits_hash;
  EXPECT_GT(moved, 0) << "batch_invariant off should mix rows into sgemm calls and move some logits";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BatchInvarianceTest,
    ::testing::Values(Case{"", "bf16", "rswa"}, Case{"q8_0", "bf16", "rswa"}, Case{"q4_k_m", "bf16", "rswa"},
                      Case{"", "q8", "full"}, Case{"", "q4", "rswa"}, Case{"", "f16", "sparse"}),
    [](const auto& info) {
      const Case& c = info.param;
      return std::string(*c.weights ? c.weights : "bf16") + "_kv_" + c.kv + "_" + c.policy;
    });

}  // namespace
}  // namespace folio
