// The folio binary end to end: bad input gives a clear message and exit code 2, and a good run
// right after still works.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_folio.h"

namespace {

namespace fs = std::filesystem;

struct CmdResult {
  int code;
  std::string out;  // stdout and stderr together
};

CmdResult folio(const std::string& args) {
  auto r = folio::test::run_folio(args, fs::temp_directory_path() / ("folio_cli_run_" + std::to_string(getpid())));
  return {r.code, r.out + r.err};
}

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("folio_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    CmdResult r = folio("make-model --arch llama --preset tiny --seed 5 --dtype f32 --out " + (dir_ / "good").string());
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // A copy of the good model to break.
  static fs::path copy_model(const std::string& name) {
    fs::path d = dir_ / name;
    fs::remove_all(d);
    fs::copy(dir_ / "good", d, fs::copy_options::recursive);
    return d;
  }
  static std::string good() { return (dir_ / "good").string(); }
  void expect_good_run_still_works() {
    CmdResult r = folio("generate --model " + good() + " --prompt-ids 5,6,7 --max-tokens 4 --threads 1");
    EXPECT_EQ(r.code, 0) << r.out;
  }

  static fs::path dir_;
};
fs::path Cli::dir_;

// folio convert writes the GGUF pair users run with llama.cpp, and folio runs it back: ocr on the
// text model + mmproj gives the directory model's markdown. Bad requests exit 2 naming the fault
// and write nothing.
TEST_F(Cli, ConvertWritesAGgufPairThatOcrReads) {
  const fs::path m = dir_ / "uocr";
  ASSERT_EQ(folio("make-model --arch unlimited-ocr --preset tiny --seed 2 --dtype f32 --out " + m.string()).code, 0);
  const std::string text = (dir_ / "uocr.gguf").string(), mm = (dir_ / "uocr-mmproj.gguf").string();
  CmdResult r = folio("convert --model " + m.string() + " --type f32 --out " + text + " --mmproj-out " + mm);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string pdf = std::string(FOLIO_SOURCE_DIR) + "/examples/sample-1page.pdf";
  CmdResult dir = folio("ocr --model " + m.string() + " --max-tokens 24 --quiet " + pdf);
  CmdResult pair = folio("ocr --model " + text + " --mmproj " + mm + " --max-tokens 24 --quiet " + pdf);
  ASSERT_EQ(pair.code, 0) << pair.out;
  EXPECT_EQ(pair.out, dir.out);
  // Quantised as llama-quantize would (token_embd too, which --weights leaves as stored): it runs.
  const std::string q8 = (dir_ / "uocr-q8_0.gguf").string();
  r = folio("convert --model " + m.string() + " --type q8_0 --out " + q8);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("q8_0"), std::string::npos) << r.out;
  EXPECT_EQ(folio("ocr --model " + q8 + " --mmproj " + mm + " --max-tokens 8 --quiet " + pdf).code, 0);

  const std::string bad = (dir_ / "never.gguf").string();
  r = folio("convert --model " + m.string() + " --type q3_k --out " + bad + " --mmproj-out " + bad + ".mm");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("q4_k_m"), std::string::npos) << r.out;
  r = folio("convert --model " + good() + " --out " + bad);  // a llama checkpoint
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("deepseek_v2"), std::string::npos) << r.out;
  r = folio("ocr --model " + text + " --max-tokens 4 --quiet " + pdf);  // no --mmproj
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--mmproj"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(bad));
  EXPECT_FALSE(fs::exists(bad + ".mm"));
}

TEST_F(Cli, GenerateAndInspectWork) {
  CmdResult r = folio("generate --model " + good() + " --prompt \"hello world\" --max-tokens 8 --policy rswa --window 4 --stats");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("generated 8 tokens"), std::string::npos) << r.out;
  r = folio("inspect --model " + good());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("architecture: llama"), std::string::npos) << r.out;
  // K and V x 2 layers x 2 KV heads x 16 dims x 2 bytes.
  EXPECT_NE(r.out.find("kv bytes per token (bf16): 256.0"), std::string::npos) << r.out;
}

// --mmap (map the checkpoint rather than read it into huge pages) goes before or after the command's
// name and changes nothing in the output; a value it cannot read is exit 2.
TEST_F(Cli, MmapGivesTheSameTokensWhereverItStands) {
  const std::string run = " --model " + good() + " --prompt-ids 5,6,7 --max-tokens 6 --threads 1";
  const CmdResult resident = folio("generate" + run);
  ASSERT_EQ(resident.code, 0) << resident.out;
  const CmdResult before = folio("--mmap generate" + run), after = folio("generate --mmap" + run);
  EXPECT_EQ(before.code, 0) << before.out;
  EXPECT_EQ(before.out, resident.out);
  EXPECT_EQ(after.out, resident.out);
  EXPECT_EQ(folio("generate --mmap=sometimes" + run).code, 2);
}

// --weights re-stores the linears at load: inspect shows the formats and fewer bytes per token,
// generate runs on them, and an unknown scheme is exit 2 naming the choices.
TEST_F(Cli, WeightsSchemeShowsInInspectAndRuns) {
  CmdResult plain = folio("inspect --model " + good());
  CmdResult q8 = folio("inspect --model " + good() + " --weights q8_0 --tensors");
  ASSERT_EQ(q8.code, 0) << q8.out;
  EXPECT_NE(q8.out.find("weight formats: f32 "), std::string::npos) << q8.out;
  EXPECT_NE(q8.out.find(" q8_0 "), std::string::npos) << q8.out;
  // 128 rows x 2 blocks x 34 bytes.
  EXPECT_NE(q8.out.find("model.layers.0.mlp.up_proj.weight q8_0 [128, 64] 8704 bytes"), std::string::npos) << q8.out;
  auto active = [](const std::string& out) {
    const auto at = out.find("active weight bytes per token: ");
    return std::stoull(out.substr(at + 31));
  };
  EXPECT_LT(active(q8.out), active(plain.out) / 3);  // f32 -> 34 bytes per 32 weights
  CmdResult r = folio("generate --model " + good() + " --prompt-ids 5,6,7 --max-tokens 4 --threads 1 --weights q4_k_m");
  EXPECT_EQ(r.code, 0) << r.out;
  r = folio("generate --model " + good() + " --prompt-ids 5,6,7 --max-tokens 4 --weights q3_k");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown scheme 'q3_k'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q4_k_m"), std::string::npos) << r.out;
  expect_good_run_still_works();
}

TEST_F(Cli, TruncatedSafetensorsIsAClearError) {
  fs::path d = copy_model("truncated");
  fs::path st = d / "model.safetensors";
  fs::resize_file(st, fs::file_size(st) / 2);
  CmdResult r = folio("generate --model " + d.string() + " --prompt hi");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.safetensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensor"), std::string::npos) << r.out;
  expect_good_run_still_works();
}

TEST_F(Cli, ConfigThatDisagreesWithTensorsIsAClearError) {
  fs::path d = copy_model("badconfig");
  nlohmann::json j = nlohmann::json::parse(std::ifstream(d / "config.json"));
  j["intermediate_size"] = 100;
  std::ofstream(d / "config.json") << j.dump();
  CmdResult r = folio("generate --model " + d.string() + " --prompt hi");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[100, 64]"), std::string::npos) << r.out;
  expect_good_run_still_works();
}

TEST_F(Cli, WindowZeroIsRejected) {
  CmdResult r = folio("generate --model " + good() + " --prompt hi --window 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("window must be at least 1"), std::string::npos) << r.out;
}

TEST_F(Cli, EmptyPromptIsRejected) {
  CmdResult r = folio("generate --model " + good() + " --prompt \"\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("prompt is empty"), std::string::npos) << r.out;
}

TEST_F(Cli, PromptLongerThanContextIsRejected) {
  std::string ids;
  for (int i = 0; i < 1100; ++i) {
    if (i) ids += ',';
    ids += std::to_string(3 + i % 400);
  }
  CmdResult r = folio("generate --model " + good() + " --prompt-ids " + ids);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("context is 1024"), std::string::npos) << r.out;
  expect_good_run_still_works();
}

TEST_F(Cli, MissingModelAndBadOptionsExitTwo) {
  EXPECT_EQ(folio("generate --model /nonexistent/model --prompt hi").code, 2);
  EXPECT_EQ(folio("generate --model " + good() + " --prompt hi --policy sliding").code, 2);
  EXPECT_EQ(folio("generate --model " + good() + " --prompt hi --kv-dtype int3").code, 2);
  EXPECT_EQ(folio("generate --prompt hi").code, 2);  // --model missing
  fs::path d = copy_model("notokenizer");
  fs::remove(d / "tokenizer.json");
  CmdResult r = folio("generate --model " + d.string() + " --prompt hi");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
}

// --kv-keep 0.25 with a 4-token observation window: of the 28 reference rows before it, 7 stay per
// KV head, plus the 4 observed; the pool holds exactly those rows and the window once decoding.
TEST_F(Cli, BenchDecodeWithKvKeepHoldsTheKeptRows) {
  fs::path json = dir_ / "bench_keep.json";
  CmdResult r = folio("bench decode --model " + good() + " --policy rswa --window 8 --kv-dtype bf16 --ref-tokens 32 --gen-tokens 48 "
                "--kv-keep 0.25 --kv-observe 4 --sample-every 16 --threads 1 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["samples"].size(), 3u);
  const size_t kept = (7 + 4 + 8) * 2 * 2 * 2 * 16 * 2;
  for (auto& s : j["samples"]) EXPECT_EQ(s["kv_bytes"].get<size_t>(), kept) << s.dump();
}

TEST_F(Cli, BenchDecodeWritesTheContract) {
  fs::path json = dir_ / "bench.json";
  CmdResult r = folio("bench decode --model " + good() + " --policy rswa --window 8 --kv-dtype bf16 --ref-tokens 32 --gen-tokens 48 "
                "--sample-every 16 --threads 1 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  for (const char* k : {"suite", "model", "policy", "window", "kv_dtype", "threads", "ref_tokens", "gen_tokens", "prefill_ms",
                        "samples", "kv_bytes_peak", "rss_peak_bytes", "decode_tokens_per_s"})
    EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["samples"].size(), 3u);
  // (P + W) tokens x 2 (K, V) x 2 layers x 2 kv heads x 16 dims x 2 bytes, from the pool's counters.
  size_t flat = (32 + 8) * 2 * 2 * 2 * 16 * 2;
  for (auto& s : j["samples"]) EXPECT_EQ(s["kv_bytes"].get<size_t>(), flat) << s.dump();
  // Prefill FLOPs: 2 per weight per token (2 layers x (q, o 64 x 64 + k, v 32 x 64 (2 KV heads)
  // + 3 x 64 x 128 MLP) = 73,728 weights) plus causal attention 4 x layers x heads x head_dim x
  // P (P + 1) / 2.
  EXPECT_DOUBLE_EQ(j["prefill_flops"].get<double>(), 2.0 * 73728 * 32 + 4.0 * 2 * 4 * 16 * 32 * 33 / 2);
  EXPECT_GT(j["sgemm_peak_gflops"].get<double>(), 0.1);
  EXPECT_NEAR(j["prefill_efficiency"].get<double>(),
              j["prefill_gflops"].get<double>() / j["sgemm_peak_gflops"].get<double>(), 1e-9);
  EXPECT_EQ(folio("bench decode --model " + good() + " --policy sparse --json " + json.string()).code, 2);
}

// Teacher-forced logit divergence: nothing against itself (f32 KV, the baseline's policy), something
// for q4, and a clear error for a bad length.
TEST_F(Cli, BenchDivergenceAgainstF32) {
  fs::path json = dir_ / "div.json";
  auto run = [&](const std::string& opts) {
    CmdResult r = folio("bench divergence --model " + good() + " --ref-tokens 24 --gen-tokens 20 --window 8 --threads 1 " + opts +
                        " --json " + json.string());
    EXPECT_EQ(r.code, 0) << r.out;
    return nlohmann::json::parse(std::ifstream(json));
  };
  const nlohmann::json same = run("--kv-dtype f32");
  EXPECT_EQ(same["steps"], 20);
  EXPECT_EQ(same["kl_mean"].get<double>(), 0.0);
  EXPECT_EQ(same["logits_abs_diff_max"].get<double>(), 0.0);
  EXPECT_EQ(same["top1_agreement"].get<double>(), 1.0);
  const nlohmann::json q4 = run("--kv-dtype q4");
  EXPECT_GT(q4["kl_mean"].get<double>(), 0.0);
  EXPECT_GT(q4["logits_abs_diff_max"].get<double>(), 0.0);
  // A weight format's cost: 8 bits moves the logits less than 4 bits, and the JSON says which ran.
  const nlohmann::json w8 = run("--kv-dtype f32 --weights q8_0");
  const nlohmann::json w4 = run("--kv-dtype f32 --weights q4_0");
  EXPECT_EQ(w8["weights"], "q8_0");
  EXPECT_EQ(w8["baseline_weights"], "checkpoint");
  EXPECT_GT(w8["kl_mean"].get<double>(), 0.0);
  EXPECT_LT(w8["kl_mean"].get<double>(), w4["kl_mean"].get<double>());
  EXPECT_EQ(folio("bench divergence --model " + good() + " --gen-tokens 0 --json " + json.string()).code, 2);
}

// The decode kernels' rates per format: every format asked for (the interleaved ones too), in every
// round (in cache, streamed, in pieces), a positive rate, its row bytes, whether int8 tiles ran
// (never with --amx off); a name that is no weight format, a row no block divides, an --amx that is
// neither auto nor off and pieces larger than the matrix are clear errors.
TEST_F(Cli, BenchKernelsGivesEachFormatsRates) {
  fs::path json = dir_ / "kernels.json";
  CmdResult r = folio("bench kernels --formats q8_0,q4_k,bf16,q6_k_x16 --inputs 4 --cols 512 --cache-kb 16 --stream-mb 1 --rounds 2 "
                      "--piece-kb 256 --threads 2 --amx off --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["suite"], "kernels");
  EXPECT_EQ(j["read_probe_gbs"].size(), 2u);
  EXPECT_EQ(j["int8_tiles"], false);
  EXPECT_EQ(j["piece_kb"], 256);
  ASSERT_EQ(j["formats"].size(), 4u);
  for (const char* f : {"q8_0", "q4_k", "bf16", "q6_k_x16"}) {
    const nlohmann::json& k = j["formats"][f];
    ASSERT_EQ(k["cache_gbs"].size(), 2u) << f;
    ASSERT_EQ(k["stream_gbs"].size(), 2u) << f;
    EXPECT_GT(k["cache_gbs_median"].get<double>(), 0.0) << f;
    EXPECT_GT(k["stream_gbs_median"].get<double>(), 0.0) << f;
    ASSERT_EQ(k["pieces_gbs"].size(), 2u) << f;
    EXPECT_GT(k["pieces_gbs_median"].get<double>(), 0.0) << f;
  }
  EXPECT_EQ(j["formats"]["q8_0"]["bytes_per_row"], 16 * 34);
  EXPECT_EQ(j["formats"]["q4_k"]["bytes_per_row"], 2 * 144);
  EXPECT_EQ(j["formats"]["bf16"]["bytes_per_row"], 2 * 512);
  EXPECT_EQ(j["formats"]["q6_k_x16"]["bytes_per_row"], 2 * 210);
  r = folio("bench kernels --amx on --json " + json.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--amx must be auto or off, not 'on'"), std::string::npos) << r.out;
  r = folio("bench kernels --formats q8_0,q9_9 --json " + json.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("'q9_9' is not a weight format"), std::string::npos) << r.out;
  r = folio("bench kernels --cols 100 --json " + json.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--cols must be a positive multiple of 256"), std::string::npos) << r.out;
  r = folio("bench kernels --stream-mb 1 --piece-kb 2048 --json " + json.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--piece-kb must be 16 to --stream-mb's KiB"), std::string::npos) << r.out;
  expect_good_run_still_works();
}

}  // namespace
