// folio ocr through the real binary: a good run on a tiny random Unlimited-OCR checkpoint writes
// markdown and JSON; every kind of bad input exits 2 with a message naming the culprit. Also
// make-model --arch unlimited-ocr and bench encode.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../runtime/test_png.h"
#include "run_folio.h"
#include "doc/preprocess.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_features.h"

namespace {

namespace fs = std::filesystem;

using OcrRun = folio::test::FolioRun;

OcrRun folio(const std::string& args, const fs::path& scratch, const std::string& env = "") {
  return folio::test::run_folio(args, scratch, env);
}

const std::string kDoc = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/doc/";

class OcrCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("folio_ocr_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    OcrRun r = folio("make-model --arch unlimited-ocr --preset tiny --seed 2 --dtype f32 --out " + model(), dir_);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string model() { return (dir_ / "model").string(); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  OcrRun ocr(const std::string& args) { return folio("ocr --model " + model() + " --max-tokens 6 --dpi 50 " + args, dir_); }
  // A bad-input run: exit 2, "folio: error:" and every `needles` in the message, nothing on stdout.
  void expect_refused(const OcrRun& r, std::initializer_list<std::string> needles) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("folio: error:"), std::string::npos) << r.err;
    for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' not in: " << r.err;
    EXPECT_EQ(r.out, "");
  }

  // A precision option (encoder_precision, prefill_precision): the one the JSON's stats say ran
  // with `--option choice` on page 1 of two_pages.pdf; the run must succeed.
  std::string precision_ran(const std::string& key, const std::string& choice) {
    OcrRun r = ocr(kDoc + "two_pages.pdf --pages 1 --json " + path("p.json") + " " + option_of(key) + " " + choice);
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(std::ifstream(path("p.json")))["stats"][key].get<std::string>();
  }
  // The same option at bf16 with the mini model 2, whose encoder and decoder stay f32: its stderr,
  // and the JSON's stats saying f32.
  std::string mini_at_bf16(const std::string& key) {
    OcrRun mini = folio("ocr --dpi 50 --max-tokens 2 " + option_of(key) + " bf16 --json " + path("m.json") + " " + kDoc + "two_pages.pdf",
                        dir_, "FOLIO_MODEL=" + std::string(FOLIO_SOURCE_DIR) + "/models/folio-mini-ocr-2");
    EXPECT_EQ(mini.code, 0) << mini.err;
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(path("m.json")))["stats"][key], "f32");
    return mini.err;
  }
  static std::string option_of(std::string key) {
    for (char& c : key)
      if (c == '_') c = '-';
    return "--" + key;
  }

  static fs::path dir_;
};
fs::path OcrCli::dir_;

TEST_F(OcrCli, TinyCheckpointIsSmallAndInThePublishedLayout) {
  EXPECT_LT(fs::file_size(dir_ / "model" / "model.safetensors"), 8u << 20);
  nlohmann::json c = nlohmann::json::parse(std::ifstream(dir_ / "model" / "config.json"));
  EXPECT_EQ(c["model_type"], "unlimited-ocr");
  EXPECT_TRUE(c["language_config"].is_object());
  EXPECT_TRUE(c["vision_config"]["width"]["sam_vit_b"].is_object());
  EXPECT_TRUE(c["vision_config"]["width"]["clip-l-14-224"].is_object());
  EXPECT_EQ(c["projector_config"]["n_embed"], c["language_config"]["hidden_size"]);
  EXPECT_TRUE(fs::exists(dir_ / "model" / "tokenizer.json"));
  // inspect reads it as a deepseek_v2 decoder with the vision tensors alongside.
  OcrRun r = folio("inspect --model " + model(), dir_);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(OcrCli, PdfToMarkdownAndJson) {
  OcrRun r = ocr(kDoc + "two_pages.pdf --out " + path("out.md") + " --json " + path("out.json") + " --policy rswa --window 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // markdown went to --out
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no progress line when stderr is not a terminal";
  EXPECT_NE(r.err.find("2 page(s) in 1 pass(es)"), std::string::npos) << r.err;
  std::stringstream md;
  md << std::ifstream(path("out.md")).rdbuf();
  EXPECT_NE(md.str().find("<!-- page 2 -->"), std::string::npos) << md.str();
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path("out.json")));
  ASSERT_EQ(j["pages"].size(), 2u);
  EXPECT_EQ(j["pages"][1]["page"], 2);
  EXPECT_GT(j["pages"][0]["width"].get<int>(), 0);
  EXPECT_EQ(j["stats"]["decode_tokens"].get<int>() <= 6, true);
  EXPECT_EQ(j["stats"]["policy"], "rswa");
  EXPECT_GT(j["stats"]["kv_bytes_peak"].get<size_t>(), 0u);
  // The run's wall time holds its disjoint phases.
  const double phases = j["stats"]["encode_ms"].get<double>() + j["stats"]["prefill_ms"].get<double>() +
                        j["stats"]["decode_ms"].get<double>();
  EXPECT_GT(phases, 0.0);
  EXPECT_GE(j["stats"]["wall_ms"].get<double>(), phases);

  // Without --out the markdown is stdout; the same input gives the same markdown.
  OcrRun s = ocr(kDoc + "two_pages.pdf --window 4");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.out, md.str());
}

// Without --passes-in-flight, a document of several passes decodes them side by side (the KV holds
// both at once) and writes the same markdown as one pass after another; --stream keeps one.
TEST_F(OcrCli, PassesGoSideBySideByDefault) {
  const std::string args = kDoc + "two_pages.pdf --window 4 --pages-per-pass 1 --json ";
  OcrRun automatic = ocr(args + path("auto.json"));
  OcrRun one = ocr(args + path("one.json") + " --passes-in-flight 1");
  ASSERT_EQ(automatic.code, 0) << automatic.err;
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(automatic.out, one.out);
  const auto peak = [&](const std::string& f) {
    return nlohmann::json::parse(std::ifstream(path(f)))["stats"]["kv_bytes_peak"].get<size_t>();
  };
  EXPECT_EQ(peak("auto.json"), 2 * peak("one.json")) << "two passes' KV at once";
  OcrRun streamed = ocr(args + path("stream.json") + " --stream");
  ASSERT_EQ(streamed.code, 0) << streamed.err;
  EXPECT_EQ(peak("stream.json"), peak("one.json"));
}

// The automatic count: up to 4 passes side by side, up to 8 where AMX tiles run the products of
// several activation rows (FOLIO_AMX=0 turns them off); six one-page passes here.
TEST_F(OcrCli, AutomaticPassesInFlightAreFourOrEightOnTiles) {
  const std::string doc = kDoc + "two_pages.pdf ";
  const std::string args = "ocr --model " + model() + " --max-tokens 6 --dpi 50 " + doc + doc + doc +
                           "--window 4 --pages-per-pass 1 --json ";
  const OcrRun one = folio(args + path("six-one.json") + " --passes-in-flight 1", dir_);
  const OcrRun untiled = folio(args + path("six-untiled.json"), dir_, "FOLIO_AMX=0");
  const OcrRun automatic = folio(args + path("six-auto.json"), dir_);
  for (const OcrRun* r : {&one, &untiled, &automatic}) ASSERT_EQ(r->code, 0) << r->err;
  EXPECT_EQ(untiled.out, one.out);
  EXPECT_EQ(automatic.out, one.out);
  const auto peak = [&](const std::string& f) {
    return nlohmann::json::parse(std::ifstream(path(f)))["stats"]["kv_bytes_peak"].get<size_t>();
  };
  EXPECT_EQ(peak("six-untiled.json"), 4 * peak("six-one.json"));
  const size_t passes = folio::kernels::int8_amx_active() ? 6 : 4;
  EXPECT_EQ(peak("six-auto.json"), passes * peak("six-one.json")) << "AMX int8 tiles: " << folio::kernels::int8_amx_active();
  // Side by side too, the run's wall time holds its phases (decode: the batch's time less the others).
  const nlohmann::json st = nlohmann::json::parse(std::ifstream(path("six-auto.json")))["stats"];
  EXPECT_GE(st["wall_ms"].get<double>(),
            st["encode_ms"].get<double>() + st["prefill_ms"].get<double>() + st["decode_ms"].get<double>());
}

TEST_F(OcrCli, ProgressLineOnATerminal) {
  // script(1) (util-linux, essential in Debian) runs the command on a pseudo-terminal.
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string cmd = "script -qec \"" + std::string(FOLIO_BINARY) + " ocr --model " + model() +
                          " --max-tokens 6 --dpi 50 " + kDoc + "two_pages.pdf --out " + path("tty.md") + "\" /dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("\r\033[Kpages 1/2 encoded"), std::string::npos) << out;  // redrawn in place
  EXPECT_NE(out.find("pages 2/2 encoded"), std::string::npos) << out;
  EXPECT_NE(out.find("KV "), std::string::npos) << out;
}

TEST_F(OcrCli, StreamAndDirectoriesOfImages) {
  fs::create_directories(dir_ / "imgs");
  for (int i : {2, 1}) {
    std::string name = "p";
    name += std::to_string(i);
    const std::string p = (dir_ / "imgs" / (name + ".png")).string();
    folio::testing::write_png(p, 300, 200, folio::testing::test_page_rgb(300, 200, i));
  }
  std::ofstream(dir_ / "imgs" / "notes.txt") << "not an image";  // ignored
  OcrRun r = ocr(path("imgs") + " --stream --json " + path("dir.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path("dir.json")));
  ASSERT_EQ(j["pages"].size(), 2u);
  EXPECT_NE(j["pages"][0]["source"].get<std::string>().find("p1.png"), std::string::npos);  // sorted by name
  EXPECT_NE(j["pages"][1]["source"].get<std::string>().find("p2.png"), std::string::npos);
  EXPECT_EQ(j["pages"][0]["width"], 300);
  EXPECT_FALSE(r.out.empty());  // the decoded text, streamed
}

// --out and --json are written page by page under temporary names and renamed once whole: a
// destination that cannot be created fails before any page is read, a full disk (/dev/full, written
// in place) when the JSON is closed; the error names the option, the path and the reason, and the
// other file is not left behind either.
TEST_F(OcrCli, OutputThatCannotBeWrittenLeavesNothing) {
  fs::create_directories(dir_ / "outs");
  expect_refused(ocr(kDoc + "two_pages.pdf --out " + path("no_dir/out.md")),
                 {"--out: cannot write '" + path("no_dir/out.md") + "'", "No such file or directory"});
  if (fs::exists("/dev/full"))
    expect_refused(ocr(kDoc + "two_pages.pdf --out " + path("outs/out.md") + " --json /dev/full"),
                   {"--json: cannot write '/dev/full'", "No space left on device"});
  EXPECT_TRUE(fs::is_empty(dir_ / "outs"));
}

TEST_F(OcrCli, CorruptPdf) { expect_refused(ocr(kDoc + "corrupt.pdf"), {"corrupt.pdf", "corrupt"}); }

TEST_F(OcrCli, EncryptedPdf) { expect_refused(ocr(kDoc + "encrypted.pdf"), {"encrypted.pdf", "encrypted", "password"}); }

TEST_F(OcrCli, ZeroPagePdf) { expect_refused(ocr(kDoc + "zero_pages.pdf"), {"zero_pages.pdf", "no pages"}); }

TEST_F(OcrCli, OnePixelImage) {
  folio::testing::write_png(path("tiny.png"), 1, 1, {10, 20, 30});
  expect_refused(ocr(path("tiny.png")), {"tiny.png", "1x1"});
}

TEST_F(OcrCli, HugeImageIsRefusedFromItsHeader) {
  // 20000 x 20000 x 3 bytes would be 1.2 GB: the header alone must be enough to refuse it.
  folio::testing::write_png_header_only(path("huge.png"), 20000, 20000);
  OcrRun r = ocr(path("huge.png"));
  expect_refused(r, {"huge.png", "20000x20000"});
}

TEST_F(OcrCli, PageRangeOutsideTheDocument) {
  expect_refused(ocr(kDoc + "two_pages.pdf --pages 2-5"), {"page range '2-5'", "2 pages", "beyond the last page"});
  expect_refused(ocr(kDoc + "two_pages.pdf --pages 0"), {"page range '0'"});
}

TEST_F(OcrCli, ModelWithoutTokenizer) {
  fs::path d = dir_ / "notok";
  fs::remove_all(d);
  fs::copy(dir_ / "model", d, fs::copy_options::recursive);
  fs::remove(d / "tokenizer.json");
  OcrRun r = folio("ocr --model " + d.string() + " --dpi 50 " + kDoc + "two_pages.pdf", dir_);
  expect_refused(r, {"tokenizer.json", d.string()});
}

TEST_F(OcrCli, OtherBadInput) {
  // No --model: the default model comes from $FOLIO_MODEL (or the shipped one).
  expect_refused(folio("ocr --dpi 50 " + kDoc + "two_pages.pdf", dir_, "FOLIO_MODEL=" + path("nowhere")), {"FOLIO_MODEL", "nowhere"});
  EXPECT_EQ(folio("ocr --dpi 50 --max-tokens 2 " + kDoc + "two_pages.pdf", dir_, "FOLIO_MODEL=" + model()).code, 0);
  expect_refused(ocr(path("does_not_exist.pdf")), {"does_not_exist.pdf", "does not exist"});
  fs::create_directories(dir_ / "empty_dir");
  expect_refused(ocr(path("empty_dir")), {"empty_dir", "no .png"});
  expect_refused(ocr(kDoc + "garbage.png"), {"garbage.png"});
  expect_refused(ocr(kDoc + "two_pages.pdf --mode tiles"), {"--mode"});
  expect_refused(ocr(kDoc + "two_pages.pdf --policy sliding"), {"sliding"});
  expect_refused(ocr(kDoc + "two_pages.pdf --window 0"), {"window"});
  expect_refused(ocr(kDoc + "two_pages.pdf --kv-keep 0"), {"keep", "(0, 1]"});
  expect_refused(ocr(kDoc + "two_pages.pdf --policy full --kv-keep 0.5"), {"keep", "rswa or sparse", "full"});
  expect_refused(ocr(kDoc + "two_pages.pdf --mode gundam --pages-per-pass 2"), {"--pages-per-pass 2", "gundam"});
  expect_refused(folio("ocr --model " + kDoc + " --dpi 50 " + kDoc + "two_pages.pdf", dir_), {"config.json"});
}

// --encoder-precision: auto runs the encoder's products in bf16 where the CPU has AVX512-BF16, and
// the JSON says which precision ran; a name it does not know, or bf16 on a CPU without it, is refused.
TEST_F(OcrCli, EncoderPrecision) {
  const bool bf16 = folio::kernels::bf16_gemm_supported();
  EXPECT_EQ(precision_ran("encoder_precision", "f32"), "f32");
  EXPECT_EQ(precision_ran("encoder_precision", "auto"), bf16 ? "bf16" : "f32");
  if (bf16) EXPECT_EQ(precision_ran("encoder_precision", "bf16"), "bf16");
  else expect_refused(ocr(kDoc + "two_pages.pdf --encoder-precision bf16"), {"--encoder-precision", "AVX512-BF16"});
  expect_refused(ocr(kDoc + "two_pages.pdf --encoder-precision fp16"), {"--encoder-precision", "auto, f32 or bf16", "fp16"});
  // The shipped model's encoder has no bf16 path: said, and the run goes on in f32.
  if (bf16) {
    EXPECT_NE(mini_at_bf16("encoder_precision").find("has no bf16 path, it runs in f32"), std::string::npos);
  }
  expect_refused(folio("bench encode --model " + model() + " --precision half --json " + path("e.json"), dir_),
                 {"--precision", "half"});
}

// --prefill-precision: the same choice for the decoder's prefill products, said in the JSON; the
// mini models' decoders stay f32 (said on bf16); bad names refused, in ocr and in bench decode.
TEST_F(OcrCli, PrefillPrecision) {
  const bool bf16 = folio::kernels::bf16_gemm_supported();
  EXPECT_EQ(precision_ran("prefill_precision", "f32"), "f32");
  EXPECT_EQ(precision_ran("prefill_precision", "auto"), bf16 ? "bf16" : "f32");
  if (bf16) EXPECT_EQ(precision_ran("prefill_precision", "bf16"), "bf16");
  else expect_refused(ocr(kDoc + "two_pages.pdf --prefill-precision bf16"), {"--prefill-precision", "AVX512-BF16"});
  expect_refused(ocr(kDoc + "two_pages.pdf --prefill-precision fp8"), {"--prefill-precision", "auto, f32 or bf16", "fp8"});
  if (bf16) {
    EXPECT_NE(mini_at_bf16("prefill_precision").find("decoder prefills in f32"), std::string::npos);
  }
  expect_refused(folio("bench decode --model " + model() + " --ref-tokens 8 --gen-tokens 2 --prefill-precision fp8 --json " +
                           path("d.json"),
                       dir_),
                 {"--prefill-precision", "fp8"});
}

// Every suite checks its --json file before it works (a missing directory used to surface only
// when a run of minutes ended): the error names the file even when the model does not exist.
TEST_F(OcrCli, BenchJsonIsCheckedBeforeTheRun) {
  const std::string bad = path("no_such_dir") + "/out.json";
  for (const std::string& args : {"bench decode --model " + path("no_model") + " --synthetic-ref",
                                  "bench encode --model " + path("no_model"),
                                  "bench accuracy --model " + path("no_model") + " --docs 1 --pages 1",
                                  "bench divergence --model " + path("no_model")}) {
    OcrRun r = folio(args + " --json " + bad, dir_);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("--json: cannot write '" + bad + "'"), std::string::npos) << args << ": " << r.err;
    EXPECT_FALSE(fs::exists(path("no_such_dir"))) << args;
  }
  // A writable file is checked without being created or emptied before the run ends.
  std::ofstream(path("kept.json")) << "kept";
  EXPECT_EQ(folio("bench encode --model " + path("no_model") + " --json " + path("kept.json"), dir_).code, 2);
  std::stringstream kept;
  kept << std::ifstream(path("kept.json")).rdbuf();
  EXPECT_EQ(kept.str(), "kept");
  EXPECT_EQ(folio("bench encode --model " + path("no_model") + " --json " + path("fresh.json"), dir_).code, 2);
  EXPECT_FALSE(fs::exists(path("fresh.json")));
}

TEST_F(OcrCli, BenchEncodeWritesJson) {
  const std::string json = path("encode.json");
  OcrRun r = folio("bench encode --model " + model() + " --runs 3 --threads 1 --page-width 600 --page-height 800 --json " + json, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  for (const char* k : {"suite", "model", "mode", "threads", "runs", "image_tokens", "ms_per_page_median", "ms_per_page",
                        "global_view_ms_median", "rss_peak_bytes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["suite"], "encode");
  EXPECT_EQ(j["image_tokens"], 273);
  EXPECT_EQ(j["ms_per_page"].size(), 3u);
  EXPECT_GT(j["ms_per_page_median"].get<double>(), 0.0);

  r = folio("bench encode --model " + model() + " --mode gundam --runs 1 --threads 1 --page-width 1000 --page-height 500 --json " + json, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(std::ifstream(json));
  const folio::TileGrid g = folio::select_tile_grid(1000, 500);
  EXPECT_EQ(j["tiles"], g.cols * g.rows);
  EXPECT_EQ(j["image_tokens"], folio::image_token_count(g));
  EXPECT_EQ(folio("bench encode --model " + model() + " --mode fast --json " + json, dir_).code, 2);
}

}  // namespace
