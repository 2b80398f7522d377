// Decoder::decode_reads counts what decode steps read: every weight matrix a step streams once (an
// expert once however many of the step's tokens chose it) and the KV each token attends over. The
// expected figures come from the checkpoint's tensors and the KV layout's arithmetic, not from the
// decoder's own byte formulas.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/safetensors.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "token_ids.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/decoder/uocr-tiny/";

struct Tiny {
  Tiny()
      : weights(SafetensorsCheckpoint::open(kDir + "model.safetensors")),
        dec(ModelConfig::from_hf_file(kDir + "config.json"), *weights, WeightNaming::HuggingFace) {}
  size_t bytes(const std::string& name) const {
    const TensorView* t = weights->find(name);
    if (!t) throw std::runtime_error("fixture lacks " + name);
    return t->nbytes();
  }
  size_t mlp(const std::string& prefix) const {
    return bytes(prefix + "gate_proj.weight") + bytes(prefix + "up_proj.weight") + bytes(prefix + "down_proj.weight");
  }
  // Everything a step reads besides the routed experts and the embedding rows: attention
  // projections, the dense first layer, routers, shared experts and the LM head.
  size_t fixed() const {
    size_t b = bytes("lm_head.weight");
    for (int l = 0; l < dec.config().n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      for (const char* w : {"q_proj", "k_proj", "v_proj", "o_proj"}) b += bytes(p + "self_attn." + w + ".weight");
      if (l < dec.config().first_k_dense) b += mlp(p + "mlp.");
      else b += bytes(p + "mlp.gate.weight") + mlp(p + "mlp.shared_experts.");
    }
    return b;
  }
  size_t expert() const { return mlp("model.layers.1.mlp.experts.0."); }
  size_t embed_row() const { return bytes("model.embed_tokens.weight") / static_cast<size_t>(dec.config().vocab); }
  int64_t moe_layers() const { return dec.config().n_layers - dec.config().first_k_dense; }
  // f32 K and V of `tokens` positions over all layers and heads.
  size_t kv(int64_t tokens) const {
    const ModelConfig& c = dec.config();
    return static_cast<size_t>(c.n_layers * tokens * 2 * c.n_kv_heads * c.head_dim) * sizeof(float);
  }
  std::unique_ptr<TensorSource> weights;
  Decoder dec;
};

std::vector<int32_t> ids(int n, int seed) { return test_token_ids(n, seed); }

void step(Decoder& dec, std::vector<SequenceKV*> kvs, const std::vector<std::vector<int32_t>>& toks, bool ref, ThreadPool& pool) {
  std::vector<Decoder::Input> in(kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) in[i].kv = kvs[i], in[i].tokens = toks[i], in[i].reference = ref;
  std::vector<float> logits(kvs.size() * static_cast<size_t>(dec.config().vocab));
  dec.forward(in, logits.data(), pool);
}

TEST(DecoderReads, OneTokenReadsItsTopKExpertsAndItsWholeKV) {
  Tiny m;
  ThreadPool pool(2);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 4));
  step(m.dec, {&kv}, {ids(13, 1)}, true, pool);
  EXPECT_EQ(m.dec.decode_reads().steps, 0) << "a prefill is not a decode step";
  step(m.dec, {&kv}, {{7}}, false, pool);
  const Decoder::DecodeReads r = m.dec.decode_reads();
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.tokens, 1);
  const size_t top_k = static_cast<size_t>(m.dec.config().top_k);
  EXPECT_EQ(r.weight_bytes, m.fixed() + m.embed_row() + static_cast<size_t>(m.moe_layers()) * top_k * m.expert());
  EXPECT_EQ(r.weight_bytes, m.dec.active_weight_bytes_per_token());
  EXPECT_EQ(r.kv_bytes, m.kv(14));  // 13 reference tokens and itself
  // Past the window of 4, a token reads the reference and the 4 newest.
  for (int32_t t = 8; t < 16; ++t) step(m.dec, {&kv}, {{t}}, false, pool);
  const Decoder::DecodeReads r9 = m.dec.decode_reads();
  EXPECT_EQ(r9.steps, 9);
  EXPECT_EQ(r9.kv_bytes, m.kv(14) + m.kv(15) + m.kv(16) + m.kv(17) + 5 * m.kv(17));
}

TEST(DecoderReads, ABatchStreamsEachChosenExpertOnce) {
  Tiny m;
  ThreadPool one(1);  // one read of the weights for the whole batch (no split by sequence)
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  constexpr int B = 6;
  std::vector<std::unique_ptr<SequenceKV>> seqs;
  std::vector<SequenceKV*> kvs;
  std::vector<std::vector<int32_t>> toks;
  int64_t ref_tokens = 0;
  for (int i = 0; i < B; ++i) {
    seqs.push_back(std::make_unique<SequenceKV>(kvpool, 1 + i, KVPolicy::parse("full", 4)));
    kvs.push_back(seqs.back().get());
    step(m.dec, {kvs.back()}, {ids(5 + 3 * i, i)}, true, one);
    ref_tokens += 5 + 3 * i;
    toks.push_back({static_cast<int32_t>(40 + 19 * i)});
  }
  step(m.dec, kvs, toks, false, one);
  const Decoder::DecodeReads r = m.dec.decode_reads();
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.tokens, B);
  EXPECT_EQ(r.kv_bytes, m.kv(ref_tokens + B));
  // The experts' part is a whole number of experts: at least top_k a layer, at most all of them,
  // and fewer than B tokens alone would have read (six tokens over 8 experts must share some).
  const size_t fixed = m.fixed() + B * m.embed_row();
  ASSERT_GT(r.weight_bytes, fixed);
  const size_t experts = r.weight_bytes - fixed;
  EXPECT_EQ(experts % m.expert(), 0u);
  const int64_t chosen = static_cast<int64_t>(experts / m.expert());
  EXPECT_GE(chosen, m.moe_layers() * m.dec.config().top_k);
  EXPECT_LE(chosen, m.moe_layers() * m.dec.config().n_routed);
  EXPECT_LT(chosen, m.moe_layers() * m.dec.config().top_k * B);
}

TEST(DecoderReads, RefusedStepsAndGeneratedChunksAreNotCounted) {
  Tiny m;
  ThreadPool pool(1);
  KVBlockPool kvpool(m.dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 4));
  step(m.dec, {&kv}, {ids(6, 2)}, true, pool);
  EXPECT_THROW(step(m.dec, {&kv}, {{static_cast<int32_t>(m.dec.config().vocab)}}, false, pool), Error);
  step(m.dec, {&kv}, {ids(3, 5)}, false, pool);  // three generated tokens of one sequence at once
  EXPECT_EQ(m.dec.decode_reads().steps, 0);
  EXPECT_EQ(m.dec.decode_reads().weight_bytes, 0u);
  step(m.dec, {&kv}, {{9}}, false, pool);
  EXPECT_EQ(m.dec.decode_reads().steps, 1);
}

}  // namespace
}  // namespace folio
