// Row invariance above the kernels: in a decode step under kernels::RowInvariantScope (how the
// scheduler runs decode rows by default), a sequence's logits are the same bits whether the step
// holds 1, 3, 8 or 17 sequences and whether the pool has 1, 2 or 3 threads: the router, the routed
// and shared experts (uocr-tiny: 8 experts, top 3, 2 shared), attention over every KV storage type
// and every KV policy. Each sequence's prompt is prefilled alone first (prefill is one pass per
// chunk in the scheduler, so its rows never share a call with other sequences'). The sizes cross the
// model's split-by-sequence grouping (2+ sequences on 2+ threads) and the policies' window of 4.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kv/block_pool.h"
#include "kv/kv_dtype.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "io/safetensors.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/decoder/uocr-tiny/";
constexpr int kSteps = 7;  // past the window of 4

struct Case {
  const char* kv;
  bool rotated;
  const char* policy;
};

std::vector<int32_t> ids(int n, int seed) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back((seed * 37 + i * 13) % 250 + 2);
  return v;
}

// The logits of the last of `n` sequences (its prompt fixed, the others' drawn by n) at each of
// kSteps decode steps that all n take together, on a pool of `threads`.
std::vector<float> target_logits(Decoder& dec, const KVTypes& types, const char* policy, int n, int threads,
                                 bool invariant = true) {
  ThreadPool pool(threads);
  KVBlockPool kvpool(dec.kv_layout(types), 0);
  const int64_t V = dec.config().vocab;
  std::vector<std::unique_ptr<SequenceKV>> seqs;
  std::vector<float> logits(static_cast<size_t>(n * V)), out;
  for (int i = 0; i < n; ++i) {
    seqs.push_back(std::make_unique<SequenceKV>(kvpool, 1 + i, KVPolicy::parse(policy, 4), 16));
    const std::vector<int32_t> prompt = i + 1 == n ? ids(45, 99) : ids(20 + 5 * i, n * 10 + i);
    Decoder::Input in;
    in.kv = seqs.back().get();
    in.tokens = prompt;
    in.reference = true;
    dec.forward({&in, 1}, logits.data(), pool);
  }
  std::vector<Decoder::Input> batch(static_cast<size_t>(n));
  std::vector<std::vector<int32_t>> tok(static_cast<size_t>(n));
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < n; ++i) {
      tok[i] = {static_cast<int32_t>(i + 1 == n ? 30 + s : 60 + 7 * i + s)};
      batch[i].kv = seqs[i].get();
      batch[i].tokens = tok[i];
    }
    const kernels::RowInvariantScope scope(invariant);
    dec.forward(batch, logits.data(), pool);
    out.insert(out.end(), logits.end() - V, logits.end());
  }
  return out;
}

class DecoderRowInvariance : public ::testing::TestWithParam<Case> {};

TEST_P(DecoderRowInvariance, DecodeRowIsTheSameBitsInAnyBatchAndPool) {
  const Case c = GetParam();
  auto weights = SafetensorsCheckpoint::open(kDir + "model.safetensors");
  Decoder dec(ModelConfig::from_hf_file(kDir + "config.json"), *weights, WeightNaming::HuggingFace);
  KVTypes types = parse_kv_types(c.kv);
  types.rotated = c.rotated;
  const std::vector<float> alone = target_logits(dec, types, c.policy, 1, 1);
  for (int n : {1, 3, 8, 17})
    for (int threads : {1, 2, 3}) {
      const std::vector<float> got = target_logits(dec, types, c.policy, n, threads);
      ASSERT_EQ(got.size(), alone.size());
      EXPECT_EQ(std::memcmp(got.data(), alone.data(), got.size() * sizeof(float)), 0)
          << c.kv << (c.rotated ? " rotated" : "") << " " << c.policy << ": " << n << " sequences on " << threads
          << " threads";
    }
}

// Without the scope, with sgemm from 2 rows, some batch moves the target's bits (the test can fail).
TEST(DecoderRowInvarianceControl, WithoutTheScopeSomeBatchMovesTheRow) {
  auto weights = SafetensorsCheckpoint::open(kDir + "model.safetensors");
  Decoder dec(ModelConfig::from_hf_file(kDir + "config.json"), *weights, WeightNaming::HuggingFace);
  const int64_t saved = kernels::matmul_gemm_min_rows();
  kernels::set_matmul_gemm_min_rows(2);
  const KVTypes types = KVTypes::uniform(KVDType::F32);
  const std::vector<float> alone = target_logits(dec, types, "rswa", 1, 1, false);
  int moved = 0;
  for (int n : {3, 8, 17})
    for (int threads : {1, 2}) {
      const std::vector<float> got = target_logits(dec, types, "rswa", n, threads, false);
      moved += std::memcmp(got.data(), alone.data(), got.size() * sizeof(float)) != 0;
    }
  kernels::set_matmul_gemm_min_rows(saved);
  EXPECT_GT(moved, 0);
}

INSTANTIATE_TEST_SUITE_P(
    KV, DecoderRowInvariance,
    ::testing::Values(Case{"f32", false, "rswa"}, Case{"f32", false, "full"}, Case{"f32", false, "sparse"},
                      Case{"bf16", false, "rswa"}, Case{"f16", false, "full"}, Case{"q8", false, "rswa"},
                      Case{"q8", false, "full"}, Case{"q4", false, "rswa"}, Case{"q4", true, "rswa"},
                      Case{"q4", true, "sparse"}),
    [](const auto& info) {
      return std::string(info.param.kv) + (info.param.rotated ? "_rotated_" : "_") + info.param.policy;
    });

}  // namespace
}  // namespace folio
