// The GGUF path: the llama-tiny fixture converted to GGUF the way llama.cpp's converter does it
// (GGUF tensor names, Q/K rows permuted for interleaved RoPE, SentencePiece vocabulary in the
// metadata) must give the same logits as the safetensors original, in f32 and q8_0.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/weight_names.h"
#include "runtime/loaded_model.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/decoder/llama-tiny";

// Rows of a [n_head * hd, in] projection reordered from rotate-half pairs (i, i + hd/2) to
// adjacent pairs (2i, 2i + 1), as llama.cpp's converter does.
std::vector<float> permute_for_interleaved(const std::vector<float>& w, int64_t n_head, int64_t hd, int64_t in) {
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::copy_n(&w[static_cast<size_t>((h * hd + j * hd / 2 + i) * in)], in, &out[static_cast<size_t>((h * hd + 2 * i + j) * in)]);
  return out;
}

// through_q8: round the weights through q8_0 but store the result as f32 (what a q8_0 file means).
std::string write_gguf(const fs::path& path, DType dtype, bool through_q8 = false) {
  ModelConfig cfg = ModelConfig::from_hf_file(kDir + "/config.json");
  auto st = SafetensorsFile::open(kDir + "/model.safetensors");
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set("llama.embedding_length", static_cast<uint32_t>(cfg.hidden));
  w.set("llama.block_count", static_cast<uint32_t>(cfg.n_layers));
  w.set("llama.attention.head_count", static_cast<uint32_t>(cfg.n_heads));
  w.set("llama.attention.head_count_kv", static_cast<uint32_t>(cfg.n_kv_heads));
  w.set("llama.feed_forward_length", static_cast<uint32_t>(cfg.intermediate));
  w.set("llama.context_length", static_cast<uint32_t>(cfg.max_positions));
  w.set("llama.attention.layer_norm_rms_epsilon", cfg.rms_eps);
  w.set("llama.rope.freq_base", static_cast<float>(cfg.rope_theta));
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xe2\x96\x81"};
  std::vector<int32_t> types = {2, 3, 3, 1};
  for (int64_t i = 4; i < cfg.vocab; ++i) {
    tokens.push_back(i < 4 + 26 ? std::string(1, static_cast<char>('a' + i - 4)) : "\xe2\x96\x81w" + std::to_string(i));
    types.push_back(1);
  }
  w.set("tokenizer.ggml.model", std::string("llama"));
  w.set("tokenizer.ggml.tokens", tokens);
  w.set("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.f));
  w.set("tokenizer.ggml.token_type", types);
  w.set("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(1));
  w.set("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(2));
  static std::vector<std::vector<uint8_t>> keep;  // tensor bytes must outlive write()
  keep.clear();
  auto hf = decoder_tensor_specs(cfg, WeightNaming::HuggingFace);
  auto gg = decoder_tensor_specs(cfg, WeightNaming::Gguf);
  for (size_t i = 0; i < hf.size(); ++i) {
    const TensorView& t = st->get(hf[i].name);
    std::vector<float> v = to_f32_vector(t);
    if (hf[i].name.find("q_proj") != std::string::npos) v = permute_for_interleaved(v, cfg.n_heads, cfg.head_dim, cfg.hidden);
    if (hf[i].name.find("k_proj") != std::string::npos) v = permute_for_interleaved(v, cfg.n_kv_heads, cfg.head_dim, cfg.hidden);
    TensorView out;
    out.name = gg[i].name;
    out.shape = t.shape;
    out.dtype = t.shape.size() == 1 ? DType::F32 : dtype;  // norms stay f32, as in llama.cpp files
    if (through_q8 && t.shape.size() == 2) {
      std::vector<uint8_t> q(static_cast<size_t>(t.numel() / 32) * sizeof(BlockQ8_0));
      convert_from_f32(DType::Q8_0, v.data(), q.data(), t.numel());
      convert_to_f32(DType::Q8_0, q.data(), v.data(), t.numel());
    }
    keep.emplace_back(out.nbytes());
    convert_from_f32(out.dtype, v.data(), keep.back().data(), out.numel());
    out.data = keep.back().data();
    w.add_tensor(out);
  }
  w.write(path.string());
  return path.string();
}

std::vector<float> run(Decoder& dec, const std::vector<int32_t>& prompt, const std::vector<int32_t>& gen) {
  ThreadPool pool(2);
  KVBlockPool kvpool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 8));
  std::vector<float> logits(static_cast<size_t>(dec.config().vocab)), all;
  Decoder::Input in;
  in.kv = &kv;
  in.tokens = prompt;
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), pool);
  all = logits;
  for (const int32_t& t : gen) {
    in.tokens = std::span<const int32_t>(&t, 1);
    in.reference = false;
    dec.forward({&in, 1}, logits.data(), pool);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(GgufLlama, MatchesSafetensorsInF32AndQ8) {
  nlohmann::json g = nlohmann::json::parse(std::ifstream(kDir + "/golden_rswa.json"));
  auto prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  auto greedy = g["greedy_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> gen(greedy.begin(), greedy.begin() + 20);  // 20 steps: past P + W = 32

  auto st = SafetensorsCheckpoint::open(kDir + "/model.safetensors");
  Decoder ref(ModelConfig::from_hf_file(kDir + "/config.json"), *st, WeightNaming::HuggingFace);
  auto want = run(ref, prompt, gen);

  fs::path tmp = fs::temp_directory_path() / ("folio_gguf_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  for (DType dt : {DType::F32, DType::Q8_0}) {
    LoadedModel m = load_model(write_gguf(tmp / (std::string("llama-") + dtype_name(dt) + ".gguf"), dt));
    EXPECT_EQ(m.format, "gguf");
    EXPECT_EQ(m.config.rope_style, kernels::RopeStyle::Interleaved);
    EXPECT_EQ(m.config.n_kv_heads, 2);
    auto got = run(*m.decoder, prompt, gen);
    float worst = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(want[i] - got[i]));
      scale = std::max(scale, std::fabs(want[i]));
    }
    std::printf("%s: max |logit diff| %.3g (max |logit| %.3g)\n", dtype_name(dt), worst, scale);
    if (dt == DType::F32) {
      EXPECT_LT(worst, 1e-4f);
    } else {
      // Quantisation itself moves logits (random tiny weights, 8 bits): they really differ...
      EXPECT_GT(worst, 1e-3f);
      // ...and the file's q8_0 blocks are read as they were written: the same values stored as f32
      // and re-quantised at load (which gives back the same blocks) decode to the same logits.
      // (The kernels' arithmetic against dequantised weights is matmul_test's.)
      LoadedModel dq = load_model(write_gguf(tmp / "llama-dequantised.gguf", DType::F32, true), true, "q8_0");
      auto exact = run(*dq.decoder, prompt, gen);
      float kernel_err = 0;
      for (size_t i = 0; i < exact.size(); ++i) kernel_err = std::max(kernel_err, std::fabs(exact[i] - got[i]));
      EXPECT_LT(kernel_err, 1e-4f);
    }
    // The SentencePiece vocabulary came from the metadata.
    ASSERT_TRUE(m.tokenizer);
    EXPECT_EQ(m.tokenizer->vocab_size(), m.config.vocab);
    EXPECT_EQ(m.tokenizer->decode(m.tokenizer->encode("abc")), "abc");
  }
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace folio
