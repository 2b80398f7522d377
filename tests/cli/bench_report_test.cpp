// folio bench report: the markdown is rendered from fabricated JSON files (--render-only) and every
// figure checked against values computed here from those files; bad input gives exit code 2; one
// end-to-end --quick run of the decode section on tiny random-weight models.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_folio.h"

namespace fs = std::filesystem;
using folio::test::run_folio;
using nlohmann::json;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("folio_report_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::stringstream s;
  s << std::ifstream(p).rdbuf();
  return s.str();
}

void write_json(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

json decode_run(const std::string& policy, bool flat) {
  // kv bytes per token 1000; P = 300, W = 128: rswa holds 300 + 128 tokens once W were generated.
  json samples = json::array();
  const double ms[] = {10.0, 11.0, 12.5, 14.0};
  for (int i = 0; i < 4; ++i) {
    const int pos = 128 * (i + 1);
    samples.push_back({{"pos", pos}, {"kv_bytes", flat ? 428000 : (300 + pos) * 1000}, {"cached_tokens", 0}, {"ms_per_token", flat ? 10.0 : ms[i]}});
  }
  return {{"suite", "decode"}, {"model", "M"}, {"architecture", "deepseek_v2"}, {"policy", policy}, {"window", 128}, {"kv_dtype", "bf16"},
          {"threads", 2}, {"isa", "avx2"}, {"ref_tokens", 300}, {"gen_tokens", 512}, {"prefill_ms", 5.0}, {"samples", samples},
          {"kv_bytes_peak", flat ? 428000 : 812000}, {"kv_bytes_per_token", 1000}, {"rss_peak_bytes", 64 << 20},
          {"decode_tokens_per_s", flat ? 100.0 : 80.0}, {"ms_per_token", flat ? 10.0 : 12.5},
          {"roofline", {{"efficiency", 0.5}, {"read_efficiency", 0.75}}}};
}

json run_entry(const std::string& id, const std::string& section, const json& params, const std::string& status, const std::string& error = "") {
  json r = {{"id", id}, {"section", section}, {"command", "folio bench x --json DIR/json/" + id + ".json"}, {"params", params},
            {"json", id + ".json"}, {"status", status}, {"wall_s", 1.5}, {"commit", "abc1234"}};
  if (!error.empty()) r["error"] = error;
  return r;
}

// A report directory with fabricated runs of every section (one of them failed).
fs::path fabricate(const std::string& name) {
  const fs::path dir = scratch(name) / "bench";
  fs::create_directories(dir / "json");
  write_json(dir / "json/decode_uocr-full_rswa_bf16.json", decode_run("rswa", true));
  write_json(dir / "json/decode_uocr-full_full_bf16.json", decode_run("full", false));
  write_json(dir / "json/accuracy_p1_rswa_bf16.json",
             {{"suite", "accuracy"}, {"engine", "folio"}, {"docs", 5}, {"pages", 1}, {"policy", "rswa"}, {"kv_dtype", "bf16"}, {"cer", 0.0183},
              {"errors", 98}, {"chars", 5357}, {"baseline_cer", 0.0179}, {"token_agreement_with_baseline", 0.99912}, {"kv_bytes_peak", 786432},
              {"baseline_kv_bytes_peak", 2359296}, {"pages_per_s", 8.5}, {"rss_peak_bytes", 30 << 20}});
  write_json(dir / "json/tesseract_p1.json", {{"suite", "accuracy"}, {"engine", "tesseract"}, {"docs", 5}, {"pages", 1}, {"cer", 0.0235},
                                               {"errors", 126}, {"chars", 5357}, {"pages_per_s", 0.30}});
  write_json(dir / "json/serve_c1.json", {{"suite", "serve"}, {"concurrency", 1}, {"requests", 8}, {"ok", 8}, {"errors", 0}, {"lost", 0},
                                           {"output_tokens_per_s", 1000.0}, {"ttft_ms_p50", 60.0}, {"ttft_ms_p99", 90.0}, {"tpot_ms_p50", 0.5},
                                           {"tpot_ms_p99", 9.0}, {"server_rss_after_first50_bytes", 35 << 20}, {"server_rss_at_end_bytes", 36 << 20}});
  write_json(dir / "json/serve_c4.json", {{"suite", "serve"}, {"concurrency", 4}, {"requests", 16}, {"ok", 16}, {"errors", 0}, {"lost", 0},
                                           {"output_tokens_per_s", 3000.0}, {"ttft_ms_p50", 70.0}, {"ttft_ms_p99", 120.0}, {"tpot_ms_p50", 1.0},
                                           {"tpot_ms_p99", 9.0}, {"server_rss_after_first50_bytes", 40 << 20}, {"server_rss_at_end_bytes", 40 << 20}});
  write_json(dir / "json/peer_folio_rswa.json", {{"suite", "decode"}, {"policy", "rswa"}, {"ref_tokens", 64}, {"gen_tokens", 16},
                                                  {"decode_tokens_per_s", 12.0}, {"rss_peak_bytes", 6.0 * (1 << 30)}});
  write_json(dir / "json/peer_pytorch_rswa.json", {{"suite", "decode"}, {"engine", "pytorch-eager"}, {"policy", "rswa"}, {"ref_tokens", 64},
                                                    {"gen_tokens", 16}, {"decode_tokens_per_s", 0.8}, {"rss_peak_bytes", 12.0 * (1 << 30)},
                                                    {"measured", "sampled"}, {"measure_at", {0, 2048, 8128}}, {"measure_tokens", 64},
                                                    {"window", 128}, {"fill_ms", 61500.0}});
  json runs = json::array();
  runs.push_back(run_entry("decode_uocr-full_full_bf16", "decode", {{"kind", "decode"}, {"model_key", "uocr-full"}, {"policy", "full"}, {"kv_dtype", "bf16"}}, "ok"));
  runs.push_back(run_entry("decode_uocr-full_rswa_bf16", "decode", {{"kind", "decode"}, {"model_key", "uocr-full"}, {"policy", "rswa"}, {"kv_dtype", "bf16"}}, "ok"));
  runs.push_back(run_entry("decode_uocr-full_sparse_bf16", "decode", {{"kind", "decode"}, {"model_key", "uocr-full"}, {"policy", "sparse"}, {"kv_dtype", "bf16"}},
                           "failed", "policy 'sparse' is not implemented yet (full, rswa)"));
  runs.push_back(run_entry("pages_p40", "pages", {{"kind", "pages"}, {"pages", 40}}, "failed", "data/heldout/p40: no such held-out set"));
  runs.push_back(run_entry("accuracy_p1_rswa_bf16", "accuracy", {{"kind", "accuracy"}, {"pages", 1}, {"docs", 5}, {"policy", "rswa"}, {"kv_dtype", "bf16"}}, "ok"));
  runs.push_back(run_entry("serve_c1", "service", {{"kind", "serve"}, {"concurrency", 1}}, "ok"));
  runs.push_back(run_entry("serve_c4", "service", {{"kind", "serve"}, {"concurrency", 4}}, "ok"));
  runs.push_back(run_entry("peer_folio_rswa", "peer", {{"kind", "peer"}, {"engine", "folio"}, {"policy", "rswa"}}, "ok"));
  runs.push_back(run_entry("peer_pytorch_rswa", "peer", {{"kind", "peer"}, {"engine", "pytorch"}, {"policy", "rswa"}}, "ok"));
  runs.push_back(run_entry("peer_folio_full", "peer", {{"kind", "peer"}, {"engine", "folio"}, {"policy", "full"}}, "ok"));  // its file is missing
  runs.push_back(run_entry("tesseract_p1", "peer", {{"kind", "tesseract"}, {"pages", 1}, {"docs", 5}}, "ok"));
  // One run kept by --resume from an invocation at another commit.
  runs[1].update({{"commit", "0ld0ne1"}, {"resumed", true}});
  // The standard set: every run above, plus one that was never run.
  json planned = json::array();
  for (const json& r : runs) planned.push_back({{"id", r["id"]}, {"section", r["section"]}, {"command", r["command"]}});
  planned.push_back({{"id", "decode_uocr-full_rswa_q4"}, {"section", "decode"}, {"command", "folio bench decode --policy rswa --kv-dtype q4"}});
  write_json(dir / "json/report.json",
             {{"folio_report", 1}, {"command", "folio bench report --out bench --quick"}, {"quick", true}, {"threads", 2}, {"planned", planned},
              {"machine", {{"cpu", "Test CPU 9000"}, {"cores", 2}, {"isa", "avx2"}, {"memory_bytes", 8.0 * (1 << 30)}, {"commit", "abc1234"},
                           {"date", "2026-01-02T03:04:05Z"}}},
              {"sizes", {{"peer", {{"ref_tokens", 64}, {"gen_tokens", 16}, {"full_size_command_ref_tokens", 4096}, {"full_size_command_gen_tokens", 8192}}}}},
              {"runs", runs}});
  return dir;
}

}  // namespace

TEST(BenchReport, RendersEveryFigureFromTheJsonFiles) {
  const fs::path dir = fabricate("render");
  // No gnuplot in PATH: the report says so instead of failing.
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path(), "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string md = slurp(dir.parent_path() / "bench.md");
  ASSERT_FALSE(md.empty());
  // Header: machine, threads, commit, date, the generating command.
  EXPECT_NE(md.find("Test CPU 9000, 2 cores, ISA avx2, 8.0 GiB"), std::string::npos) << md;
  EXPECT_NE(md.find("Commit: abc1234; date (UTC): 2026-01-02T03:04:05Z"), std::string::npos);
  EXPECT_NE(md.find("`folio bench report --out bench --quick`"), std::string::npos);
  EXPECT_NE(md.find("Runs: 11 (3 not available)"), std::string::npos);
  EXPECT_NE(md.find("Runs by the commit they ran at: 0ld0ne1 (1), abc1234 (10); 1 of them were kept from earlier invocations"),
            std::string::npos) << md;
  // Decode: rswa constant, (300 + 128) tokens x 1000 bytes; full grows by 1000 bytes per token.
  EXPECT_NE(md.find("| rswa | bf16 | 300 | 512 | 428,000 -> 428,000 | 10.00 -> 10.00 (1.000) | 100.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("identical at every sample from position 128 on: 428,000 bytes = 428 tokens x 1,000 bytes per token"), std::string::npos);
  const double full_ratio = 14.0 / 10.0;
  EXPECT_NE(md.find("| full | bf16 | 300 | 512 | 428,000 -> 812,000 | 10.00 -> 14.00 (" + fmt("%.3f", full_ratio) + ")"), std::string::npos) << md;
  EXPECT_NE(md.find("(1,024,000 bytes per 1024 generated tokens)"), std::string::npos);
  EXPECT_NE(md.find("| 50.00% / 75.00% |"), std::string::npos);
  // Runs written before the peak RSS was taken ahead of the bandwidth test say that it includes its buffers.
  EXPECT_NE(md.find("| 64.0 MiB (incl. 1 GiB of bandwidth-test buffers) |"), std::string::npos) << md;
  // A failed run: its error in place of the figures, and its command still listed.
  EXPECT_NE(md.find("| sparse | bf16 | not available: policy 'sparse' is not implemented yet (full, rswa) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 40 | not available: data/heldout/p40: no such held-out set |"), std::string::npos);
  EXPECT_NE(md.find("folio bench x --json DIR/json/pages_p40.json"), std::string::npos);
  // Samples table, side by side.
  EXPECT_NE(md.find("| 256 | 556,000 | 11.00 | 428,000 | 10.00 |"), std::string::npos) << md;
  // Accuracy with the definitions written out.
  EXPECT_NE(md.find("| rswa | bf16 | **1.83%** (98 / 5,357) | 1.79% | 0.9991 | - | - | 786,432 | 2,359,296 | " +
                    fmt("%.3f", 786432.0 / 2359296.0) + " | - | 30.0 MiB |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("**Definitions**"), std::string::npos);
  EXPECT_NE(md.find("[accuracy_p1_rswa_bf16.json](bench/json/accuracy_p1_rswa_bf16.json)"), std::string::npos);
  // Service: the row and the batching ratio computed from the two files.
  EXPECT_NE(md.find("| 4 | 16 | 16 / 0 / 0 | 3000 | 70 / 120 | 1.00 / 9.00 | 40.0 MiB / 40.0 MiB |"), std::string::npos) << md;
  EXPECT_NE(md.find("concurrency 4 gives " + fmt("%.1f", 3000.0 / 1000.0) + "x"), std::string::npos);
  // Peers: ratios folio / PyTorch; a listed file that is missing makes its cell not available.
  EXPECT_NE(md.find("| rswa | 64 + 16 | 12.00 | 0.80 | **" + fmt("%.2f", 12.0 / 0.8) + "** | 6144.0 MiB | 12288.0 MiB | **" + fmt("%.2f", 0.5) + "** |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("peer_folio_full.json is missing"), std::string::npos);
  EXPECT_NE(md.find("PyTorch rswa was timed in windows of 64 decoded tokens from generated positions 0, 2,048, 8,128"), std::string::npos) << md;
  EXPECT_NE(md.find("Time spent fast-forwarding: 61.5 s."), std::string::npos) << md;
  EXPECT_NE(md.find("--ref-tokens 4096 --gen-tokens 8192"), std::string::npos);
  EXPECT_NE(md.find("| 5 x 1-page | 1.83% | 2.35% | 8.50 | 0.30 | " + fmt("%.1f", 8.5 / 0.3) + "x |"), std::string::npos) << md;
  // The standard set's runs without a result: the three not available and the one never run, by
  // section; finished runs are not listed there.
  const size_t todo = md.find("## Not yet run\n\n4 of the standard set's 12 runs have no result in this report yet");
  ASSERT_NE(todo, std::string::npos) << md;
  const std::string rest = md.substr(todo);
  EXPECT_NE(rest.find("- decode: 2 runs\n  - `folio bench x --json DIR/json/decode_uocr-full_sparse_bf16.json`\n"
                      "  - `folio bench decode --policy rswa --kv-dtype q4`\n- pages: 1 runs\n"),
            std::string::npos) << rest;
  EXPECT_NE(rest.find("- peer: 1 runs\n  - `folio bench x --json DIR/json/peer_folio_full.json`"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("serve_c1.json"), std::string::npos) << rest;
  // Plots: not drawn, with the reason, and nothing pretends otherwise.
  EXPECT_NE(md.find("plot decode_uocr-full.png not drawn: gnuplot not found"), std::string::npos);
  EXPECT_EQ(md.find("![Full-size"), std::string::npos);
  EXPECT_NE(r.out.find("gnuplot not found"), std::string::npos);
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

// A run whose KV peak exceeds the baseline's gets a note saying why, from its own figures: passes
// come from the run's count or, in files written before it, from one stop reason per pass; the
// baseline's from the run or, failing that, from the set's own run of the baseline's policy (here
// in bf16: a set need not hold the baseline's own dtype).
TEST(BenchReport, AccuracyTableExplainsAKVPeakAboveTheBaseline) {
  const fs::path dir = scratch("kv_above") / "bench";
  fs::create_directories(dir / "json");
  auto acc = [](const std::string& policy, const std::string& dtype, double kv, double active) {
    return json{{"suite", "accuracy"}, {"engine", "folio"}, {"docs", 1}, {"pages", 100}, {"policy", policy}, {"kv_dtype", dtype},
                {"cer", 0.03}, {"errors", 900}, {"chars", 30000}, {"baseline_cer", 0.0266}, {"baseline_policy", "full"},
                {"baseline_kv_dtype", "f32"}, {"token_agreement_with_baseline", 0.1}, {"kv_bytes_peak", kv},
                {"baseline_kv_bytes_peak", 40108032}, {"kv_active_bytes_max", active}, {"baseline_kv_active_bytes_max", 39625728},
                {"pages_per_s", 1.5}, {"rss_peak_bytes", 100 << 20}};
  };
  auto stops = [](int n) { return json::array({{{"pdf", "composed-100-pages"}, {"stop_reasons", json(std::vector<std::string>(n, "eos"))}}}); };
  json full = acc("full", "bf16", 20054016, 19812864), sparse = acc("sparse", "bf16", 46571520, 1357056), rswa = acc("rswa", "bf16", 10321920, 10077696);
  full["documents"] = stops(5);    // an older file: passes only as stop reasons
  sparse["documents"] = stops(1);  // and no baseline_passes: the full run's are used
  rswa.update({{"passes", 5}, {"baseline_passes", 5}});
  write_json(dir / "json/accuracy_p100_full_bf16.json", full);
  write_json(dir / "json/accuracy_p100_sparse_bf16.json", sparse);
  write_json(dir / "json/accuracy_p100_rswa_bf16.json", rswa);
  json runs = json::array();
  for (const auto& [pol, dt] : {std::pair<std::string, std::string>{"full", "bf16"}, {"rswa", "bf16"}, {"sparse", "bf16"}}) {
    const std::string id = "accuracy_p100_" + pol + "_" + dt;
    runs.push_back(run_entry(id, "accuracy", {{"kind", "accuracy"}, {"pages", 100}, {"docs", 1}, {"policy", pol}, {"kv_dtype", dt}}, "ok"));
  }
  write_json(dir / "json/report.json", {{"folio_report", 1}, {"command", "folio bench report --out bench"}, {"threads", 2}, {"runs", runs}});
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path(), "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string md = slurp(dir.parent_path() / "bench.md");
  EXPECT_NE(md.find("| 2.66% (full, f32) | 0.1000 | - | 5 (5) | 20,054,016 | 40,108,032 | 0.500 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| rswa | bf16 | **3.00%**"), std::string::npos) << md;
  EXPECT_NE(md.find("| 5 (5) | 10,321,920 | 40,108,032 | " + fmt("%.3f", 10321920.0 / 40108032.0) + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 (5) | 46,571,520 | 40,108,032 | " + fmt("%.3f", 46571520.0 / 40108032.0) + " |"), std::string::npos) << md;
  const size_t note = md.find("**KV / baseline above 1.**");
  ASSERT_NE(note, std::string::npos) << md;
  const std::string rest = md.substr(note, md.find("Commands", note) - note);
  EXPECT_NE(rest.find("- sparse bf16: 46,571,520 bytes against 40,108,032, in 1 pass(es) against the baseline's 5; "
                      "KV read per token at most 1,357,056 bytes against 39,625,728.\n"),
            std::string::npos) << rest;
  // Only runs above the baseline are listed.
  EXPECT_EQ(rest.find("- rswa"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("- full"), std::string::npos) << rest;
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

// Archived runs of an OCR document (bench decode --pages) and of the encoder: the RSS bound of
// issue 3 is computed from the run's own figures, and each command is rebuilt from its file.
TEST(BenchReport, RendersArchivedOcrDocumentAndEncoderRuns) {
  const fs::path dir = fabricate("archive");
  fs::create_directories(dir / "archive");
  json doc = decode_run("rswa", true);
  doc.update({{"reference", "pages"}, {"pages", 40}, {"page_width", 2480}, {"page_height", 3508}, {"vision_mode", "base"},
              {"encode_ms_per_page_median", 14800.0}, {"ref_tokens", 10932}, {"gen_tokens", 40000}, {"prefill_ms", 180000.0},
              {"checkpoint_bytes", 6.0e9}, {"rss_peak_bytes", 7.0e9}, {"trained_context", 32768}, {"context", 65536}});
  doc["roofline"]["kv_bytes_read_per_token_max"] = 671000000;
  for (auto& x : doc["samples"]) x["rss_bytes"] = 6.5e9;
  write_json(dir / "archive/ocr_40pages.json", doc);
  json over = doc;
  over["rss_peak_bytes"] = 7.3e9;  // 1.3 GB above the weights
  write_json(dir / "archive/ocr_40pages_over.json", over);
  json under = doc;
  under["rss_peak_bytes"] = 5.0e9;  // mmap: only the weight pages touched count
  write_json(dir / "archive/ocr_40pages_under.json", under);
  write_json(dir / "archive/ocr_encode.json", {{"suite", "encode"}, {"model", "M"}, {"mode", "base"}, {"page_width", 2480}, {"page_height", 3508},
                                              {"image_tokens", 273}, {"tiles", 0}, {"ms_per_page_median", 14839.2}, {"global_view_ms_median", 14779.8},
                                              {"runs", 3}, {"threads", 2}, {"rss_peak_bytes", 1 << 30}});
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path(), "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string md = slurp(dir.parent_path() / "bench.md");
  EXPECT_NE(md.find("| rswa | bf16 | 10,932 | 40,000 | 428,000 -> 428,000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 671,000,000 (most) | " + fmt("%.1f", 7.0e9 / (1 << 20)) + " MiB |"), std::string::npos) << md;
  EXPECT_NE(md.find("40 synthetic 2480x3508 pages encoded by the model (base mode, 14.8 s per page, median) into P = 10,932 reference tokens"),
            std::string::npos) << md;
  const std::string bound = "(bound: weights + 1.2 GB = " + fmt("%.1f", (6.0e9 + 1.2e9) / (1 << 20)) + " MiB, ";
  EXPECT_NE(md.find("peak " + fmt("%.1f", 7.0e9 / (1 << 20)) + " MiB against the checkpoint's " + fmt("%.1f", 6.0e9 / (1 << 20)) +
                    " MiB of weights: " + fmt("%.1f", 1.0e9 / (1 << 20)) + " MiB above them " + bound + "met)"),
            std::string::npos) << md;
  EXPECT_NE(md.find(bound + "NOT met)"), std::string::npos) << md;
  EXPECT_NE(md.find(fmt("%.1f", 1.0e9 / (1 << 20)) + " MiB below them (only the weight pages touched count) " + bound + "met)"),
            std::string::npos) << md;
  EXPECT_NE(md.find("Positions run to 50,932, past the checkpoint's context of 32,768"), std::string::npos) << md;
  EXPECT_NE(md.find("| base | 2480x3508 | 273 | 0 | 14839.2 | 14779.8 | 3 | 2 | 1024.0 MiB | [ocr_encode.json]"), std::string::npos) << md;
  EXPECT_NE(md.find("folio bench decode --model M --pages 40 --gen-tokens 40000 --context 65536 --policy rswa --window 128 --kv-dtype bf16 --threads 2"),
            std::string::npos) << md;
  EXPECT_NE(md.find("folio bench encode --model M --mode base --runs 3 --threads 2"), std::string::npos) << md;
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

// Side studies are files of their own (DIR/sections/*.md): copied in by file name, before the
// archive, so --render-only never drops them; other files there are ignored.
TEST(BenchReport, CopiesHandSectionsInByFileName) {
  const fs::path dir = fabricate("sections");
  fs::create_directories(dir / "sections");
  std::ofstream(dir / "sections/20-second.md") << "### Second study\n\nsecond body\n";
  std::ofstream(dir / "sections/10-first.md") << "### First study\n\nfirst body";
  std::ofstream(dir / "sections/notes.txt") << "### Not a section\n";
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path(), "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string md = slurp(dir.parent_path() / "bench.md");
  const size_t head = md.find("## Side studies (hand-run commands)"), first = md.find("### First study\n\nfirst body\n\n"),
               second = md.find("### Second study\n\nsecond body\n\n");
  ASSERT_NE(head, std::string::npos) << md;
  ASSERT_NE(first, std::string::npos) << md;
  ASSERT_NE(second, std::string::npos) << md;
  EXPECT_LT(head, first);
  EXPECT_LT(first, second);
  EXPECT_EQ(md.find("Not a section"), std::string::npos);
  EXPECT_GT(md.find("## Side studies"), md.find("## Peers"));
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

TEST(BenchReport, DrawsPngPlotsWithGnuplot) {
  if (access("/usr/bin/gnuplot", X_OK) != 0) GTEST_SKIP() << "gnuplot not installed (optional)";
  const fs::path dir = fabricate("plot");
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string png = slurp(dir / "decode_uocr-full.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_NE(slurp(dir.parent_path() / "bench.md").find("![Full-size random-weight Unlimited-OCR decoder: KV bytes and ms/token vs generated tokens](bench/decode_uocr-full.png)"),
            std::string::npos);
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

// The decode plot's gnuplot script, captured by a stand-in gnuplot: one colour per policy, one mark
// per KV dtype, lines in policy order whatever order report.json lists the runs in.
TEST(BenchReport, DecodePlotColoursEachPolicyInAFixedOrder) {
  const fs::path dir = fabricate("style");
  json manifest = json::parse(slurp(dir / "json/report.json"));
  std::reverse(manifest["runs"].begin(), manifest["runs"].end());  // sparse, rswa, full
  // A finished sparse run holding the very bytes rswa holds.
  for (json& run : manifest["runs"])
    if (run["id"] == "decode_uocr-full_sparse_bf16") run["status"] = "ok", run.erase("error");
  write_json(dir / "json/decode_uocr-full_sparse_bf16.json", decode_run("sparse", true));
  write_json(dir / "json/report.json", manifest);
  const fs::path bin = dir.parent_path() / "bin", captured = dir.parent_path() / "captured";
  fs::create_directories(bin);
  fs::create_directories(captured);
  {
    std::ofstream(bin / "gnuplot") << "#!/bin/sh\n/bin/cp \"$1\" " << captured.string() << "/\n";
  }
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  const auto r = run_folio("bench report --out " + dir.string() + " --render-only", dir.parent_path(), "PATH=" + bin.string());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string gp = slurp(captured / "decode_uocr-full.png.gp");
  ASSERT_FALSE(gp.empty());
  const size_t full = gp.find("lc rgb '#d62728' pt 7 dt 1 title 'full (bf16 KV)'"), rswa = gp.find("lc rgb '#1f77b4' pt 7 dt 1 title 'rswa (bf16 KV)'");
  ASSERT_NE(full, std::string::npos) << gp;
  ASSERT_NE(rswa, std::string::npos) << gp;
  EXPECT_LT(full, rswa);
  EXPECT_NE(gp.find("set key top left"), std::string::npos);  // few lines: the key stays inside
  // KV panel (the first plot command): sparse's line would hide rswa's, so it is drawn wide, just
  // before it, and says so; the ms/token panel keeps the policy order with the usual width.
  const size_t second = gp.find("\nplot ", gp.find("\nplot ") + 1);
  ASSERT_NE(second, std::string::npos) << gp;
  const std::string kv = gp.substr(0, second), ms = gp.substr(second);
  const size_t full_kv = kv.find("lw 2 lc rgb '#d62728'");
  ASSERT_NE(full_kv, std::string::npos) << kv;
  const size_t sparse_kv = kv.find("lc rgb '#2ca02c' pt 7 dt 1 lw 6 title 'sparse (bf16 KV): the same bytes as rswa (the wide band under its line)'");
  ASSERT_NE(sparse_kv, std::string::npos) << kv;
  EXPECT_LT(sparse_kv, kv.find("title 'rswa (bf16 KV)'")) << kv;
  EXPECT_EQ(kv.find("lw 2 lc rgb '#2ca02c'"), std::string::npos) << kv;
  const size_t sparse_ms = ms.find("lw 2 lc rgb '#2ca02c' pt 7 dt 1 title 'sparse (bf16 KV)'");
  ASSERT_NE(sparse_ms, std::string::npos) << ms;
  EXPECT_GT(sparse_ms, ms.find("title 'rswa (bf16 KV)'")) << ms;
  if (!HasFailure()) fs::remove_all(dir.parent_path());
}

TEST(BenchReport, BadInputExitsTwoWithAClearMessage) {
  const fs::path s = scratch("bad");
  auto r = run_folio("bench report --out " + (s / "b").string() + " --sections decode,speed", s);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sections: unknown 'speed' (known: decode, pages, accuracy, service, peer)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s / "b"));  // nothing created before the options were checked
  r = run_folio("bench report --out " + (s / "b").string() + " --kv-dtypes bf16,f8", s);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--kv-dtypes: unknown 'f8'"), std::string::npos) << r.err;
  // Unwritable --out: below a regular file.
  std::ofstream(s / "file") << "x";
  r = run_folio("bench report --out " + (s / "file" / "b").string() + " --sections decode", s);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out: cannot create"), std::string::npos) << r.err;
  r = run_folio("bench report --out " + (s / "b").string() + " --sections decode --only decode_mini_rswa_bf16,decode_mini_rswa_q9", s);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--only: no run 'decode_mini_rswa_q9' in the sections, policies and KV dtypes given"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("e.g. decode_mini_full_f32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s / "b"));
  r = run_folio("bench report --out " + (s / "none").string() + " --render-only", s);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("report.json not found"), std::string::npos) << r.err;
  fs::remove_all(s);
}

TEST(BenchReport, QuickDecodeEndToEndOnTinyModels) {
  const fs::path s = scratch("e2e");
  const fs::path model = s / "tiny";
  auto r = run_folio("make-model --arch unlimited-ocr-decoder --preset tiny --out " + model.string(), s);
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path dir = s / "out" / "bench";
  r = run_folio("bench report --out " + dir.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 1 --decoder-model " +
                    model.string() + " --mini-model " + model.string(),
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json manifest = json::parse(slurp(dir / "json/report.json"));
  ASSERT_EQ(manifest["runs"].size(), 4u);
  // The mini model's runs (minutes each at full size) come before the full-size decoder's (an hour).
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(manifest["runs"][i]["id"].get<std::string>().rfind(i < 2 ? "decode_mini_" : "decode_uocr-full_", 0), 0u) << i;
  const std::string md = slurp(s / "out" / "bench.md");
  // The page names the model as a reader makes it (models/<name>), not by this machine's path.
  EXPECT_EQ(md.find(model.string()), std::string::npos);
  EXPECT_NE(md.find("`folio make-model --arch unlimited-ocr-decoder --preset full --seed 1 --dtype bf16 --out models/tiny` makes it"),
            std::string::npos);
  for (const json& run : manifest["runs"]) {
    ASSERT_EQ(run["status"], "ok") << run.dump();
    std::string shown = run["command"].get<std::string>();
    for (size_t at; (at = shown.find(model.string())) != std::string::npos;) shown.replace(at, model.string().size(), "models/tiny");
    EXPECT_NE(md.find(shown), std::string::npos) << shown;
    const json j = json::parse(slurp(dir / "json" / run["json"].get<std::string>()));
    EXPECT_EQ(j["threads"], 1);
    const json& samples = j["samples"];
    ASSERT_FALSE(samples.empty());
    // The table row carries the file's first and last KV bytes.
    auto grouped = [](long long v) {
      std::string d = std::to_string(v), out;
      for (size_t i = 0; i < d.size(); ++i) {
        if (i && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
      }
      return out;
    };
    const std::string kv = grouped(samples.front()["kv_bytes"].get<long long>()) + " -> " + grouped(samples.back()["kv_bytes"].get<long long>());
    EXPECT_NE(md.find("| " + j["policy"].get<std::string>() + " | bf16 | " + grouped(j["ref_tokens"].get<long long>()) + " | " +
                      grouped(j["gen_tokens"].get<long long>()) + " | " + kv + " |"),
              std::string::npos) << md;
    if (j["policy"] == "rswa") EXPECT_EQ(samples.front()["kv_bytes"], samples.back()["kv_bytes"]);
    else EXPECT_LT(samples.front()["kv_bytes"].get<double>(), samples.back()["kv_bytes"].get<double>());
  }
  EXPECT_NE(md.find("### Full-size random-weight Unlimited-OCR decoder"), std::string::npos);
  EXPECT_NE(md.find("### The shipped OCR model's decoder"), std::string::npos);
  EXPECT_NE(md.find("Commit: unknown"), std::string::npos);  // no git in PATH
  EXPECT_NE(r.out.find("--quick sizes"), std::string::npos);
  // --resume keeps what the earlier report finished with the same command; a run whose command
  // differs (another thread count) or whose JSON is gone runs again.
  for (const json& run : manifest["runs"]) EXPECT_TRUE(run.contains("finished")) << run.dump();
  const std::string first_json = manifest["runs"][0]["json"].get<std::string>();
  const std::string kept = slurp(dir / "json" / first_json);
  fs::remove(dir / "json" / manifest["runs"][1]["json"].get<std::string>());
  r = run_folio("bench report --out " + dir.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 1 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume",
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json resumed = json::parse(slurp(dir / "json/report.json"));
  ASSERT_EQ(resumed["runs"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(resumed["runs"][i]["status"], "ok");
    EXPECT_EQ(resumed["runs"][i].value("resumed", false), i != 1) << i;
  }
  EXPECT_EQ(slurp(dir / "json" / first_json), kept);  // not rewritten
  // A resumed report stopped part way still lists every run it was keeping, including those after
  // the one it stopped in: here that run's "folio" snapshots report.json and fails.
  fs::remove(dir / "json" / manifest["runs"][1]["json"].get<std::string>());
  const fs::path stop = s / "stop.sh", snapshot = s / "snapshot.json";
  {
    std::ofstream(stop) << "#!/bin/sh\n/bin/cp " << (dir / "json/report.json").string() << " " << snapshot.string() << "\nexit 3\n";
  }
  fs::permissions(stop, fs::perms::owner_all);
  r = run_folio("bench report --out " + dir.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 1 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume --folio " + stop.string(),
                s, "PATH=/nonexistent");
  const json during = json::parse(slurp(snapshot));
  ASSERT_EQ(during["runs"].size(), 3u) << during.dump();
  for (const json& run : during["runs"]) {
    EXPECT_EQ(run["status"], "ok");
    EXPECT_TRUE(run.value("resumed", false));
    EXPECT_NE(run["id"], manifest["runs"][1]["id"]);
  }
  r = run_folio("bench report --out " + dir.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 2 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume",
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  for (const json& run : json::parse(slurp(dir / "json/report.json"))["runs"]) EXPECT_FALSE(run.value("resumed", false)) << run.dump();
  // A --resume of another section keeps the decode section's finished runs in the report (their
  // JSON files are there), though this invocation does not plan them; the page lists what the
  // standard set still lacks (here the service runs, which fail, and the sections never run).
  const json before = json::parse(slurp(dir / "json/report.json"));
  r = run_folio("bench report --out " + dir.string() + " --quick --sections service --policies full,rswa --kv-dtypes bf16 --threads 2 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume --folio " + stop.string(),
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json after = json::parse(slurp(dir / "json/report.json"));
  size_t carried = 0, service = 0;
  for (const json& run : after["runs"]) {
    if (run["section"] == "decode") {
      ++carried;
      EXPECT_EQ(run["status"], "ok");
      EXPECT_TRUE(run.value("resumed", false));
    } else {
      EXPECT_EQ(run["section"], "service");
      EXPECT_EQ(run["status"], "failed");
      ++service;
    }
  }
  EXPECT_EQ(carried, before["runs"].size());
  EXPECT_GT(service, 0u);
  const std::string md2 = slurp(s / "out" / "bench.md");
  for (const json& run : before["runs"]) EXPECT_NE(md2.find("| " + run["params"]["policy"].get<std::string>() + " | bf16 |"), std::string::npos);
  EXPECT_EQ(md2.find("- Moved: "), std::string::npos);  // the commands name this directory (absolute, the page relative)
  const size_t todo = md2.find("## Not yet run");
  ASSERT_NE(todo, std::string::npos) << md2;
  const std::string rest = md2.substr(todo);
  EXPECT_NE(rest.find("- service: " + std::to_string(service) + " runs"), std::string::npos) << rest;
  EXPECT_NE(rest.find("- pages: "), std::string::npos) << rest;
  EXPECT_EQ(rest.find("- decode: "), std::string::npos) << rest;
  // --only runs just the runs named; --resume keeps the rest (here the other decode runs).
  const std::string again = before["runs"][2]["id"].get<std::string>();
  r = run_folio("bench report --out " + dir.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 2 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume --only " + again,
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("folio bench report: 1 runs"), std::string::npos) << r.out;
  const json only = json::parse(slurp(dir / "json/report.json"));
  ASSERT_EQ(only["runs"].size(), before["runs"].size());
  for (const json& run : only["runs"]) {
    EXPECT_EQ(run["status"], "ok");
    EXPECT_EQ(run.value("resumed", false), run["id"] != again) << run.dump();
  }
  EXPECT_NE(only["command"].get<std::string>().find("--only " + again), std::string::npos);
  // The report directory moved (as a full run made elsewhere is moved into docs/benchmarks): the
  // page is rewritten from the files where they are now and says where the runs wrote them, and a
  // --resume there keeps every run (their commands differ only in the directory of --json).
  const fs::path moved = s / "out" / "moved";
  fs::rename(dir, moved);
  r = run_folio("bench report --out " + moved.string() + " --render-only", s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string md3 = slurp(s / "out" / "moved.md");
  const std::string now = (moved / "json").string() + "/";  // as the commands name directories (absolute here)
  EXPECT_NE(md3.find("from the JSON files in `" + now + "`"), std::string::npos) << md3;
  EXPECT_NE(md3.find("- Moved: " + std::to_string(only["runs"].size()) + " of the runs wrote their JSON into `" + dir.string() + "/json/`; the files "
                     "were moved into `" + now + "` since"),
            std::string::npos) << md3;
  EXPECT_NE(md3.find("[" + again + ".json](moved/json/" + again + ".json)"), std::string::npos) << md3;
  EXPECT_EQ(json::parse(slurp(moved / "json/report.json"))["json_dir"], only["json_dir"]);  // the record is not rewritten
  r = run_folio("bench report --out " + moved.string() + " --quick --sections decode --policies full,rswa --kv-dtypes bf16 --threads 2 --decoder-model " +
                    model.string() + " --mini-model " + model.string() + " --resume --folio " + stop.string(),
                s, "PATH=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json kept_moved = json::parse(slurp(moved / "json/report.json"));
  ASSERT_EQ(kept_moved["runs"].size(), before["runs"].size());
  for (const json& run : kept_moved["runs"]) {
    EXPECT_EQ(run["status"], "ok") << run.dump();  // "stop.sh" would have failed a run made again
    EXPECT_TRUE(run.value("resumed", false)) << run.dump();
  }
  EXPECT_NE(slurp(s / "out" / "moved.md").find("- Moved: "), std::string::npos);
  if (!HasFailure()) fs::remove_all(s);
}
