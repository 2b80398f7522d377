// Batching and chunking must not change results: a batch of sequences with different reference
// lengths gives each the logits it gets alone, and a chunk of generated tokens written into the
// R-SWA ring at once equals feeding them one by one.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "io/safetensors.h"
#include "token_ids.h"

namespace folio {
namespace {

// Batched rows go through the same kernels with a different row count, so the summation order may
// differ: allow float32 rounding (logits are O(1-5)), far below any real disagreement.
constexpr float kTol = 1e-4f;
const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/decoder/";

struct Model {
  explicit Model(const std::string& name)
      : weights(SafetensorsCheckpoint::open(kDir + name + "/model.safetensors")),
        dec(ModelConfig::from_hf_file(kDir + name + "/config.json"), *weights, WeightNaming::HuggingFace) {}
  std::unique_ptr<TensorSource> weights;
  Decoder dec;
};

std::vector<int32_t> ids(int n, int seed) { return test_token_ids(n, seed); }

std::vector<float> step(Decoder& dec, SequenceKV& kv, const std::vector<int32_t>& toks, bool ref, ThreadPool& pool) {
  std::vector<float> logits(static_cast<size_t>(dec.config().vocab));
  Decoder::Input in;
  in.kv = &kv;
  in.tokens = toks;
  in.reference = ref;
  dec.forward({&in, 1}, logits.data(), pool);
  return logits;
}

float max_diff(const std::vector<float>& a, const float* b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

class DecoderBatch : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderBatch, BatchEqualsAlone) {
  Model m(GetParam());
  ThreadPool pool(2);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  const int64_t V = m.dec.config().vocab;
  auto pa = ids(13, 1), pb = ids(29, 2);
  // Alone.
  SequenceKV a1(kvpool, 1, KVPolicy::parse("rswa", 4)), b1(kvpool, 2, KVPolicy::parse("full", 4));
  auto la = step(m.dec, a1, pa, true, pool), lb = step(m.dec, b1, pb, true, pool);
  // Together: both prefills in one batch, then 12 decode steps in one batch.
  SequenceKV a2(kvpool, 3, KVPolicy::parse("rswa", 4)), b2(kvpool, 4, KVPolicy::parse("full", 4));
  std::vector<float> both(static_cast<size_t>(2 * V));
  Decoder::Input in[2];
  in[0].kv = &a2;
  in[0].tokens = pa;
  in[0].reference = true;
  in[1].kv = &b2;
  in[1].tokens = pb;
  in[1].reference = true;
  m.dec.forward(in, both.data(), pool);
  EXPECT_LT(max_diff(la, both.data()), kTol);
  EXPECT_LT(max_diff(lb, both.data() + V), kTol);
  for (int s = 0; s < 12; ++s) {
    std::vector<int32_t> ta = {static_cast<int32_t>(10 + s)}, tb = {static_cast<int32_t>(100 + s)};
    la = step(m.dec, a1, ta, false, pool);
    lb = step(m.dec, b1, tb, false, pool);
    in[0].tokens = ta;
    in[0].reference = false;
    in[1].tokens = tb;
    in[1].reference = false;
    m.dec.forward(in, both.data(), pool);
    EXPECT_LT(max_diff(la, both.data()), kTol) << "step " << s;
    EXPECT_LT(max_diff(lb, both.data() + V), kTol) << "step " << s;
  }
}

// A decode step of several sequences on a small model runs whole sequences per thread; each must
// still get the logits it gets alone, whatever group and thread it lands in.
TEST_P(DecoderBatch, DecodeSplitBySequenceEqualsAlone) {
  Model m(GetParam());
  ThreadPool pool(2);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  const int64_t V = m.dec.config().vocab;
  constexpr int B = 5;  // not a multiple of the thread count
  const char* policies[B] = {"rswa", "full", "rswa", "full", "rswa"};
  std::vector<std::unique_ptr<SequenceKV>> alone, together;
  std::vector<std::vector<int32_t>> tok(B);
  for (int i = 0; i < B; ++i) {
    alone.push_back(std::make_unique<SequenceKV>(kvpool, 1 + i, KVPolicy::parse(policies[i], 4)));
    together.push_back(std::make_unique<SequenceKV>(kvpool, 100 + i, KVPolicy::parse(policies[i], 4)));
    const auto prompt = ids(5 + 7 * i, i);
    step(m.dec, *alone.back(), prompt, true, pool);
    step(m.dec, *together.back(), prompt, true, pool);
  }
  std::vector<Decoder::Input> in(B);
  std::vector<float> all(static_cast<size_t>(B * V));
  for (int s = 0; s < 9; ++s) {  // past the window of 4
    for (int i = 0; i < B; ++i) {
      tok[i] = {static_cast<int32_t>(20 + 13 * i + s)};
      in[i].kv = together[i].get();
      in[i].tokens = tok[i];
    }
    ASSERT_TRUE(m.dec.split_by_sequence(in, pool));
    m.dec.forward(in, all.data(), pool);
    for (int i = 0; i < B; ++i) EXPECT_LT(max_diff(step(m.dec, *alone[i], tok[i], false, pool), all.data() + i * V), kTol) << "step " << s << " seq " << i;
  }
  // Prefill chunks, one thread, or a single sequence: split across the pool as before.
  ThreadPool one(1);
  EXPECT_FALSE(m.dec.split_by_sequence(in, one));
  EXPECT_FALSE(m.dec.split_by_sequence({in.data(), 1}, pool));
  const auto chunk = ids(3, 9);
  in[0].tokens = chunk;
  EXPECT_FALSE(m.dec.split_by_sequence(in, pool));
}

TEST_P(DecoderBatch, GeneratedChunkIntoRingEqualsOneByOne) {
  Model m(GetParam());
  ThreadPool pool(2);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  auto prompt = ids(9, 3), gen = ids(11, 4);  // 11 generated tokens > window 4
  SequenceKV one(kvpool, 1, KVPolicy::parse("rswa", 4)), chunk(kvpool, 2, KVPolicy::parse("rswa", 4));
  step(m.dec, one, prompt, true, pool);
  step(m.dec, chunk, prompt, true, pool);
  std::vector<float> last;
  for (int32_t t : gen) last = step(m.dec, one, {t}, false, pool);
  auto lc = step(m.dec, chunk, gen, false, pool);
  EXPECT_LT(max_diff(last, lc.data()), kTol);
  EXPECT_EQ(one.cached_tokens(), chunk.cached_tokens());
}

TEST_P(DecoderBatch, ContextOverflowIsRefusedAndLeavesSequenceIntact) {
  Model m(GetParam());
  ThreadPool pool(1);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 4));
  std::vector<int32_t> too_long(static_cast<size_t>(m.dec.config().max_positions + 1), 5);
  EXPECT_THROW(step(m.dec, kv, too_long, true, pool), Error);
  EXPECT_EQ(kv.length(), 0);
  EXPECT_THROW(step(m.dec, kv, {static_cast<int32_t>(m.dec.config().vocab)}, true, pool), Error);  // id out of range
  EXPECT_NO_THROW(step(m.dec, kv, {5, 6}, true, pool));
  EXPECT_EQ(kv.length(), 2);
}

INSTANTIATE_TEST_SUITE_P(Models, DecoderBatch, ::testing::Values("llama-tiny", "uocr-tiny"),
                         [](const auto& info) { return info.param == "llama-tiny" ? std::string("llama") : std::string("uocr"); });

}  // namespace
}  // namespace folio
