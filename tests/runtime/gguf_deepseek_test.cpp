// llama.cpp's deepseek2-ocr GGUF layout, with llama.cpp itself as the oracle.
//
// tests/fixtures/gguf holds what llama.cpp made (see its README): two files its llama-quantize
// wrote (Q8_0, Q4_K_M) from the f32 GGUF folio convert writes for the tiny-k random decoder, and
// the tokens and logits its own greedy decoding gives on each (full attention, f32 KV). folio must
// read those files and decode the same tokens; its own convert must choose the same tensor types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/row_interleave.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "io/gguf.h"
#include "io/json_file.h"
#include "kernels/cpu/cpu_features.h"
#include "runtime/decoder_gguf_export.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "text/bpe_tokenizer.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/gguf";

const nlohmann::json& oracle() {
  static const nlohmann::json j = read_json_file(kFixtures + "/llama_cpp_greedy.json");
  return j;
}

// The tiny-k decoder as a Hugging Face directory and as folio's f32 GGUF of it, made once.
struct TinyK {
  fs::path dir = fs::temp_directory_path() / ("folio_gguf_ds_" + std::to_string(getpid()));
  fs::path hf = dir / "hf";
  fs::path f32 = dir / "tiny-k-f32.gguf";
  TinyK() {
    fs::create_directories(dir);
    write_random_checkpoint(preset_config("unlimited-ocr-decoder", "tiny-k"), hf.string(), 7, DType::F32);
    LoadedModel m = load_model(hf.string(), false);
    write_decoder_gguf(m.config, *m.weights, read_json_file((hf / "tokenizer.json").string()), "f32", f32.string(),
                       "tiny-k");
  }
  ~TinyK() { fs::remove_all(dir); }
};
const TinyK& tiny() {
  static TinyK t;
  return t;
}

struct Greedy {
  std::vector<float> first_logits;  // after the prompt
  std::vector<int32_t> tokens;
};

// Greedy decoding with full attention and an f32 KV cache, as the oracle ran llama.cpp.
Greedy greedy(Decoder& dec, const std::vector<int32_t>& prompt, int steps) {
  ThreadPool pool(2);
  KVBlockPool kvpool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("full", 128));
  std::vector<float> logits(static_cast<size_t>(dec.config().vocab));
  Decoder::Input in;
  in.kv = &kv;
  in.tokens = prompt;
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), pool);
  Greedy g{logits, {}};
  for (int s = 0; s < steps; ++s) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    g.tokens.push_back(next);
    in.tokens = std::span<const int32_t>(&g.tokens.back(), 1);
    in.reference = false;
    dec.forward({&in, 1}, logits.data(), pool);
  }
  return g;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

Greedy run_file(const std::string& path) {
  LoadedModel m = load_model(path, false);
  return greedy(*m.decoder, oracle()["prompt"].get<std::vector<int32_t>>(), oracle()["steps"].get<int>());
}

TEST(GgufDeepseek, ConvertedF32FileDecodesAsLlamaCppAndAsTheSafetensors) {
  const Greedy gguf = run_file(tiny().f32.string());
  const Greedy hf = run_file(tiny().hf.string());
  const auto& want = oracle()["f32"];
  EXPECT_EQ(gguf.tokens, want["tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(hf.tokens, gguf.tokens);
  // Same weights, other names and layout (stacked experts): the same numbers.
  EXPECT_LT(max_abs_diff(gguf.first_logits, hf.first_logits), 1e-5f);
  // llama.cpp's own arithmetic (ggml f32 matmuls and softmax) agrees to float rounding...
  const auto llama = want["logits_after_prompt"].get<std::vector<float>>();
  const float vs_llama = max_abs_diff(gguf.first_logits, llama);
  EXPECT_LT(vs_llama, 1e-3f);
  // ...a tolerance that tells models apart: llama.cpp's Q8_0 file's logits are farther away.
  EXPECT_GT(max_abs_diff(oracle()["Q8_0"]["logits_after_prompt"].get<std::vector<float>>(), llama), 10 * vs_llama);
}

// load_model reads checkpoints into huge-page memory by default and maps them under --mmap: the
// weights are the same bytes either way, so the logits are the same bits.
TEST(GgufDeepseek, ResidentAndMappedCheckpointsDecodeTheSameBits) {
  ASSERT_EQ(checkpoint_residency(), Residency::kResident);
  for (const std::string& path : {tiny().f32.string(), tiny().hf.string()}) {
    SCOPED_TRACE(path);
    const Greedy resident = run_file(path);
    set_checkpoint_residency(Residency::kMapped);
    const Greedy mapped = run_file(path);
    set_checkpoint_residency(Residency::kResident);
    EXPECT_EQ(resident.tokens, mapped.tokens);
    EXPECT_EQ(resident.first_logits, mapped.first_logits);
  }
}

// Where the CPU reads it faster (AVX-512 VNNI), loading a resident GGUF or re-storing linears in q4_k
// interleaves the q4_k and q6_k linears by 16 rows (core/row_interleave.h); the products keep their
// bits, so the logits are the same bits as with the rows as stored. A mapped file keeps its pages as
// they are.
TEST(GgufDeepseek, InterleavedRowsDecodeTheSameBits) {
  struct Types {
    DType attn_q, head;
    int64_t head_rows;
  };
  auto view_of = [](const LoadedModel& m, const char* name) {
    const TensorSource& src = m.quantized ? *m.quantized : *m.weights;
    return src.find(name);
  };
  auto run = [&](const std::string& path, const std::string& weights, bool interleave, Types* types) {
    kernels::set_interleave(interleave);
    LoadedModel m = load_model(path, false, weights);
    kernels::set_interleave(true);
    const TensorView* q = view_of(m, weights.empty() ? "blk.1.attn_q.weight" : "model.layers.1.self_attn.q_proj.weight");
    const TensorView* head = view_of(m, weights.empty() ? "output.weight" : "lm_head.weight");
    *types = {q ? q->dtype : DType::F32, head ? head->dtype : DType::F32, head ? head->shape[0] : 0};
    return greedy(*m.decoder, oracle()["prompt"].get<std::vector<int32_t>>(), oracle()["steps"].get<int>());
  };
  const bool pays = kernels::interleave_pays();
  for (const auto& [path, weights] : {std::pair{kFixtures + "/tiny-k-Q4_K_M.gguf", std::string()},
                                      std::pair{tiny().hf.string(), std::string("q4_k_m")}}) {
    SCOPED_TRACE(path + " " + weights);
    Types on_types, off_types;
    const Greedy on = run(path, weights, true, &on_types);
    const Greedy off = run(path, weights, false, &off_types);
    EXPECT_EQ(off_types.attn_q, DType::Q4_K);
    EXPECT_EQ(on_types.attn_q, pays ? DType::Q4_K_X16 : DType::Q4_K);
    // The head is q6_k in Q4_K_M; it is interleaved where its rows are whole groups.
    EXPECT_EQ(off_types.head, DType::Q6_K);
    EXPECT_EQ(on_types.head, pays && on_types.head_rows % kGroupRows == 0 ? DType::Q6_K_X16 : DType::Q6_K);
    EXPECT_EQ(on.tokens, off.tokens);
    EXPECT_EQ(on.first_logits, off.first_logits);
  }
  set_checkpoint_residency(Residency::kMapped);
  Types mapped_types;
  run(kFixtures + "/tiny-k-Q4_K_M.gguf", "", true, &mapped_types);
  set_checkpoint_residency(Residency::kResident);
  EXPECT_EQ(mapped_types.attn_q, DType::Q4_K);
  EXPECT_EQ(mapped_types.head, DType::Q6_K);
}

// With quantised weights, bit-equal logits cannot last: activations are rounded to 8 bits per
// block before each integer matmul, and float sums in a different order (folio's attention against
// ggml's) can move one activation across a rounding boundary, which shifts this model's logits by up
// to ~0.06 at once (measured: one code of attn_output's input flipping moves an output by 6.6e-4).
// So: the logits after the prompt agree to float rounding (no flip happened there); then, fed
// llama.cpp's own tokens, folio picks llama.cpp's token at every step whose margin (best minus
// runner-up logit, from the oracle) exceeds what a flip can move.
TEST(GgufDeepseek, ReadsLlamaQuantizeFilesAndDecodesLlamaCppsTokens) {
  const auto prompt = oracle()["prompt"].get<std::vector<int32_t>>();
  // The third: the hidden-64 tiny decoder in llama.cpp's Q5_1 (what Q5_K_M files hold where a row is
  // not a multiple of 256).
  // The 32-element block formats (q8_0, q5_1) sum their blocks in two chains where llama.cpp keeps
  // one (quant_dot_impl.h): the last bits differ, which may flip a code already in the prompt, so
  // their logits agree to one flip's reach; the K formats' to float rounding.
  struct Case {
    const char *type, *file;
    float prompt_bound;
  };
  for (const auto& [type, file, prompt_bound] : {Case{"Q8_0", "tiny-k-Q8_0.gguf", 0.06f}, Case{"Q4_K_M", "tiny-k-Q4_K_M.gguf", 2e-5f},
                                                 Case{"tiny_Q5_1", "tiny-Q5_1.gguf", 0.06f}}) {
    SCOPED_TRACE(type);
    const auto& want = oracle()[type];
    const auto tokens = want["tokens"].get<std::vector<int32_t>>();
    const auto margins = want["margins"].get<std::vector<float>>();
    LoadedModel m = load_model(kFixtures + "/" + file, false);
    ThreadPool pool(2);
    KVBlockPool kvpool(m.decoder->kv_layout(DType::F32), 0);
    SequenceKV kv(kvpool, 1, KVPolicy::parse("full", 128));
    std::vector<float> logits(static_cast<size_t>(m.config.vocab));
    Decoder::Input in;
    in.kv = &kv;
    in.tokens = prompt;
    in.reference = true;
    m.decoder->forward({&in, 1}, logits.data(), pool);
    EXPECT_LT(max_abs_diff(logits, want["logits_after_prompt"].get<std::vector<float>>()), prompt_bound);
    int checked = 0;
    for (size_t s = 0; s < tokens.size(); ++s) {
      const int32_t mine = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (margins[s] > 0.15f) {
        EXPECT_EQ(mine, tokens[s]) << "step " << s << ", llama.cpp's margin " << margins[s];
        ++checked;
      }
      in.tokens = std::span<const int32_t>(&tokens[s], 1);
      in.reference = false;
      m.decoder->forward({&in, 1}, logits.data(), pool);
    }
    EXPECT_GE(checked, 12);  // most steps are far from a tie
  }
  // Free-running, folio's greedy tokens are llama.cpp's until the first step whose margin the
  // difference allows for above could overturn: for Q4_K_M the first near-tie (step 8, margin
  // 0.002), for Q8_0 the first margin within a flip's reach (step 6, 0.024).
  struct Run {
    const char *type, *file;
    float tie;
  };
  for (const auto& [type, file, tie] : {Run{"Q8_0", "tiny-k-Q8_0.gguf", 0.06f}, Run{"Q4_K_M", "tiny-k-Q4_K_M.gguf", 0.005f}}) {
    SCOPED_TRACE(type);
    const Greedy run = run_file(kFixtures + "/" + file);
    const auto want = oracle()[type]["tokens"].get<std::vector<int32_t>>();
    const auto margins = oracle()[type]["margins"].get<std::vector<float>>();
    const size_t sure = std::find_if(margins.begin(), margins.end(), [&](float m) { return m < tie; }) - margins.begin();
    EXPECT_GE(sure, 6u);
    EXPECT_TRUE(std::equal(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(sure), run.tokens.begin()));
  }
}

TEST(GgufDeepseek, ConvertChoosesLlamaQuantizeTensorTypes) {
  LoadedModel hf = load_model(tiny().hf.string(), false);
  const auto tok = read_json_file((tiny().hf / "tokenizer.json").string());
  for (auto [ours, theirs] : {std::pair{"q8_0", "Q8_0"}, std::pair{"q4_k_m", "Q4_K_M"}}) {
    SCOPED_TRACE(ours);
    const fs::path out = tiny().dir / (std::string(ours) + ".gguf");
    write_decoder_gguf(hf.config, *hf.weights, tok, ours, out.string(), "tiny-k");
    auto mine = GgufFile::open(out.string());
    auto ref = GgufFile::open(kFixtures + "/tiny-k-" + theirs + ".gguf");
    ASSERT_EQ(mine->names(), ref->names());
    for (const std::string& n : ref->names()) {
      const TensorView& a = mine->tensor(n);
      const TensorView& b = ref->tensor(n);
      EXPECT_EQ(a.dtype, b.dtype) << n;
      EXPECT_EQ(a.shape, b.shape) << n;
      // q8_0 and q5_0 blocks are llama.cpp's to the byte; the K formats' scale searches differ.
      if (a.dtype == DType::Q8_0 || a.dtype == DType::Q5_0 || a.dtype == DType::F32) {
        EXPECT_EQ(0, std::memcmp(a.data, b.data, a.nbytes())) << n;
      }
    }
    EXPECT_EQ(mine->get_string("tokenizer.ggml.pre"), ref->get_string("tokenizer.ggml.pre"));
    EXPECT_EQ(mine->get_string_array("tokenizer.ggml.tokens"), ref->get_string_array("tokenizer.ggml.tokens"));
  }
}

// folio's q5_1 quantiser writes llama.cpp's blocks to the byte: the f32 file llama-quantize read,
// quantised by folio, equals the file it wrote.
TEST(GgufDeepseek, Q5_1BlocksEqualLlamaQuantizes) {
  const fs::path dir = tiny().dir / "tiny";
  write_random_checkpoint(preset_config("unlimited-ocr-decoder", "tiny"), dir.string(), 7, DType::F32);
  LoadedModel m = load_model(dir.string(), false);
  const std::string f32 = (tiny().dir / "tiny-f32.gguf").string();
  write_decoder_gguf(m.config, *m.weights, read_json_file((dir / "tokenizer.json").string()), "f32", f32, "tiny");
  auto src = GgufFile::open(f32);
  auto ref = GgufFile::open(kFixtures + "/tiny-Q5_1.gguf");
  int compared = 0;
  for (const std::string& n : ref->names()) {
    const TensorView& want = ref->tensor(n);
    if (want.dtype != DType::Q5_1) continue;
    const TensorView& x = src->tensor(n);
    std::vector<uint8_t> mine(want.nbytes());
    convert_from_f32(DType::Q5_1, static_cast<const float*>(x.data), mine.data(), x.numel());
    EXPECT_EQ(0, std::memcmp(mine.data(), want.data, mine.size())) << n;
    ++compared;
  }
  EXPECT_GT(compared, 20);
}

TEST(GgufDeepseek, VocabularyFromTheFileTokenizesAsTheTokenizerJson) {
  LoadedModel m = load_model(tiny().f32.string(), true);
  auto original = load_tokenizer_json((tiny().hf / "tokenizer.json").string());
  ASSERT_TRUE(m.tokenizer);
  EXPECT_EQ(m.tokenizer->vocab_size(), original->vocab_size());
  for (const std::string text : {"Invoice No. 12345, due 2026-12-02: pay \xe2\x82\xac" "99.50!\n\n  Total\tsum",
                                 "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e text, it's \"quoted\" (ok)"}) {
    EXPECT_EQ(m.tokenizer->encode(text), original->encode(text)) << text;
    EXPECT_EQ(m.tokenizer->decode(m.tokenizer->encode(text)), text);
  }
}

TEST(GgufDeepseek, MetadataThatDisagreesWithATensorNamesTheTensorAndTheFile) {
  // Rewrite the f32 file with a wrong expert width: the stacked experts no longer fit the config.
  auto g = GgufFile::open(tiny().f32.string());
  GgufWriter w;
  for (const std::string& k : g->keys()) w.set(k, *g->get(k));
  w.set("deepseek2-ocr.expert_feed_forward_length", uint32_t{320});
  for (const std::string& n : g->names()) w.add_tensor(g->tensor(n));
  const std::string bad = (tiny().dir / "bad-expert-width.gguf").string();
  w.write(bad);
  try {
    load_model(bad, false);
    FAIL() << "loaded a file whose experts disagree with its metadata";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("blk.1.ffn_gate_exps.weight[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  // The good file still loads (nothing is cached between loads).
  EXPECT_NO_THROW(load_model(tiny().f32.string(), false));
}

TEST(GgufDeepseek, ConvertRefusesWhatLlamaCppCannotExpress) {
  const fs::path llama = tiny().dir / "llama";
  write_random_checkpoint(preset_config("llama", "tiny"), llama.string(), 1, DType::F32);
  LoadedModel m = load_model(llama.string(), false);
  const auto tok = read_json_file((llama / "tokenizer.json").string());
  const std::string out = (tiny().dir / "llama.gguf").string();
  EXPECT_THROW(write_decoder_gguf(m.config, *m.weights, tok, "bf16", out, "x"), Error);
  LoadedModel hf = load_model(tiny().hf.string(), false);
  try {
    write_decoder_gguf(hf.config, *hf.weights, read_json_file((tiny().hf / "tokenizer.json").string()), "q3_k", out, "x");
    FAIL() << "accepted an unknown type";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q4_k_m"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace folio
