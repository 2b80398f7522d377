// --weights: a checkpoint's linears re-stored in block formats at load, with llama.cpp's choice of
// format per tensor for the _M mixes, and a decoder over them that still computes the same model.
#include "model/quantized_weights.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/row_interleave.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

// A llama-shaped model wide enough for the K formats (rows of 256), whose MLP width 544 is not:
// its down_proj rows take llama.cpp's fallback formats.
struct Checkpoint {
  fs::path dir = fs::temp_directory_path() / ("folio_quantized_weights_test_" + std::to_string(getpid()));
  Checkpoint() {
    ModelConfig c = preset_config("llama", "tiny");
    c.hidden = 256;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    c.intermediate = 544;
    c.validate();
    write_random_checkpoint(c, dir.string(), 5, DType::F32);
  }
  ~Checkpoint() { fs::remove_all(dir); }
};

const Checkpoint& checkpoint() {
  static Checkpoint c;
  return c;
}

// The format a linear was re-stored in; q4_k or q6_k interleaved by 16 rows (where the CPU reads it
// faster, core/row_interleave.h) is the same format in another layout.
DType type_of(const LoadedModel& m, const std::string& name) { return row_dtype(m.quantized->find(name)->dtype); }

TEST(QuantizedWeights, Q4_K_MChoosesFormatsAsLlamaCpp) {
  LoadedModel m = load_model(checkpoint().dir.string(), false, "q4_k_m");
  EXPECT_EQ(type_of(m, "lm_head.weight"), DType::Q6_K);
  EXPECT_EQ(type_of(m, "model.layers.0.self_attn.q_proj.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(m, "model.layers.0.self_attn.v_proj.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(m, "model.layers.1.self_attn.v_proj.weight"), DType::Q6_K);  // last eighth: more bits
  EXPECT_EQ(type_of(m, "model.layers.0.mlp.up_proj.weight"), DType::Q4_K);
  EXPECT_EQ(type_of(m, "model.layers.0.mlp.down_proj.weight"), DType::Q5_0);  // 544 columns: q4_k's fallback
  EXPECT_EQ(type_of(m, "model.layers.1.mlp.down_proj.weight"), DType::Q8_0);  // q6_k's fallback
  EXPECT_EQ(type_of(m, "model.embed_tokens.weight"), DType::F32);            // embeddings stay
  EXPECT_EQ(type_of(m, "model.norm.weight"), DType::F32);
  EXPECT_NE(m.quantized->description().find("weights q4_k_m"), std::string::npos);
}

std::vector<float> prefill_logits(const LoadedModel& m) {
  ThreadPool threads(2);
  KVBlockPool pool(m.decoder->kv_layout(DType::F32), 0);
  SequenceKV kv(pool, 1, KVPolicy::parse("full", 128));
  std::vector<int32_t> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + 5) % 512);
  Decoder::Input in;
  in.kv = &kv;
  in.tokens = ids;
  in.reference = true;
  std::vector<float> logits(static_cast<size_t>(m.config.vocab));
  m.decoder->forward({&in, 1}, logits.data(), threads);
  return logits;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// The re-stored model is the same model: logits close to the f32 checkpoint's, closer with more
// bits, and not identical (the linears really changed format).
TEST(QuantizedWeights, DecoderOverRestoredWeightsComputesTheSameModel) {
  const LoadedModel f32 = load_model(checkpoint().dir.string(), false);
  const std::vector<float> ref = prefill_logits(f32);
  double previous = 1.0;
  for (const char* scheme : {"q8_0", "q6_k", "q4_k_m", "q4_0"}) {
    const std::vector<float> got = prefill_logits(load_model(checkpoint().dir.string(), false, scheme));
    const double c = cosine(ref, got);
    EXPECT_GT(c, 0.97) << scheme;
    EXPECT_NE(got, ref) << scheme;
    if (std::string(scheme) != "q4_0") {
      EXPECT_LT(c, previous + 1e-4) << scheme << " should not beat a finer format";
    }
    previous = c;
  }
}

TEST(QuantizedWeights, UnknownSchemeIsRejectedWithTheChoices) {
  try {
    load_model(checkpoint().dir.string(), false, "q3_k");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("q3_k"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("q4_k_m"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(parse_weight_scheme("bf16").has_value());  // not a block format
}

}  // namespace
}  // namespace folio
