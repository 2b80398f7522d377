// folio bench decode: KV bytes and latency as the output grows; folio bench encode: vision encoder
// time per page (docs/bench-contract.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include <unistd.h>

#include "bench/json_output.h"
#include "cmdline/commands.h"
#include "core/median.h"
#include "model/quantized_weights.h"
#include "core/error.h"
#include "core/memory_stats.h"
#include "core/thread_pool.h"
#include "bench/bandwidth.h"
#include "bench/compute_peak.h"
#include "kernels/cpu/cpu_features.h"
#include "kv/block_pool.h"
#include "cmdline/kv_options.h"
#include "kv/sequence_kv.h"
#include "doc/preprocess.h"
#include "vision/encoder_flops.h"
#include "vision/image_assembly.h"
#include "runtime/loaded_model.h"
#include "doc/image_write.h"
#include "runtime/generator.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pages.h"
#include "runtime/ocr_unlimited.h"
#include "text/sampler.h"

namespace folio::cli {

namespace {

struct DecodeArgs {
  std::string model, json, weights, prefill_precision = "auto";
  KVOptions kv;
  PolicyOptions policy;
  int64_t ref_tokens = 1024, gen_tokens = 2048, sample_every = 256, prefill_chunk = 2048;
  int threads = 0;
  bool synthetic_ref = true;
  uint64_t seed = 1;
  // OCR models: a reference of this many synthetic pages, encoded by the model's own vision tower
  // (Base mode) and laid out by its multi-page prompt, instead of random token ids.
  int pages = 0;
  int page_width = 2480, page_height = 3508;  // A4 at 300 DPI
  int64_t context = 0;  // > 0: positions allowed past the checkpoint's context (Decoder::set_context)
  // Measure the copy bandwidth again at every sample (in a child process, outside the timed steps),
  // so each sample's efficiency is judged by the bandwidth of its own moment.
  bool sample_bandwidth = false;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A deterministic page that looks like print: white, with dark text-line bands of varying length.
RgbImage synthetic_page(int w, int h, unsigned seed = 7) {
  RgbImage img(w, h, 255);
  std::mt19937 rng(seed);
  const int line = std::max(4, h / 60);
  for (int y0 = line; y0 + line < h; y0 += 2 * line) {
    const int x1 = w / 10 + static_cast<int>(rng() % static_cast<unsigned>(std::max(1, w * 8 / 10)));
    for (int y = y0; y < y0 + line * 2 / 3; ++y)
      for (int x = w / 10; x < x1; ++x)
        if ((x / std::max(1, line / 2)) % 4 != 3) std::fill_n(img.row(y) + x * 3, 3, static_cast<uint8_t>(rng() % 64));
  }
  return img;
}

// What a decode run measured; the roofline, JSON and summary are the same for both kinds of reference.
struct DecodeRun {
  int64_t ref_tokens = 0;
  double prefill_ms = 0, decode_ms = 0;
  // The sgemm peak measured right after the prefill (0: not measured then, the report measures one
  // after the run): the machine's speed swings between minutes, so the efficiency of a prefill is
  // judged against the peak nearest to it.
  double prefill_sgemm_peak_gflops = 0;
  nlohmann::json samples = nlohmann::json::array();
  size_t kv_peak = 0;
  double kv_read_bytes = 0;           // KV bytes a generated token read: the mean, or the most (basis "max")
  std::string kv_read_basis = "mean";
  nlohmann::json extra = nlohmann::json::object();  // keys of the reference kind
};

// FLOPs of prefilling `tokens` reference tokens: the matmuls (2 per weight per token) plus causal
// attention (q.k and p.v: 4 x heads x head_dim per query and key it sees).
double prefill_flops(const Decoder& dec, int64_t tokens) {
  const ModelConfig& c = dec.config();
  const double p = static_cast<double>(tokens);
  const double attention = 4.0 * static_cast<double>(c.n_layers * c.n_heads * c.head_dim) * p * (p + 1) / 2;
  return 2.0 * static_cast<double>(dec.prefill_params_per_token()) * p + attention;
}

int report_decode(const DecodeArgs& a, const KVPolicy& policy, const KVTypes& kv_types, const Decoder& dec, double kv_bytes_per_token,
                  ThreadPool& threads, const DecodeRun& r) {
  // The run's own peak, before the bandwidth measurement below allocates its buffers (2 x 512 MiB).
  const size_t rss_peak = peak_rss_bytes();
  // Roofline: a decode step must at least stream the active weights and the cached KV once.
  const ModelConfig& cfg = dec.config();
  const double bw = kernels::measure_copy_bandwidth_gbs(threads);
  const double sgemm_after_run = kernels::measure_sgemm_gflops(threads);
  const double sgemm_gflops = r.prefill_sgemm_peak_gflops > 0 ? r.prefill_sgemm_peak_gflops : sgemm_after_run;
  const double prefill_gflops = prefill_flops(dec, r.ref_tokens) / (r.prefill_ms * 1e6);
  const double read_bw = kernels::measure_read_bandwidth_gbs(threads);
  const double weight_bytes = static_cast<double>(dec.active_weight_bytes_per_token());
  const double step_bytes = weight_bytes + r.kv_read_bytes;
  const double roofline_ms = step_bytes / (bw * 1e9) * 1e3, read_roofline_ms = step_bytes / (read_bw * 1e9) * 1e3;
  const double ms_per_token = r.decode_ms / static_cast<double>(a.gen_tokens);
  const size_t kv_peak = r.kv_peak;
  nlohmann::json j = {{"suite", "decode"},
                      {"model", a.model},
                      {"architecture", cfg.arch_name()},
                      {"weights", a.weights.empty() ? "checkpoint" : a.weights},
                      {"active_weight_bytes_per_token", dec.active_weight_bytes_per_token()},
                      {"policy", policy.name()},
                      {"window", policy.window}, {"sparse_top_k", policy.top_k}, {"sparse_focus_pages", policy.focus_pages},
                      {"kv_dtype", kv_types.name()},
                      {"threads", threads.size()},
                      {"isa", kernels::isa_name(kernels::active_isa())},
                      {"ref_tokens", r.ref_tokens},
                      {"gen_tokens", a.gen_tokens},
                      {"prefill_ms", r.prefill_ms},
                      {"prefill_flops", prefill_flops(dec, r.ref_tokens)},
                      {"prefill_gflops", prefill_gflops},
                      {"sgemm_peak_gflops", sgemm_gflops},
                      {"sgemm_peak_measured", r.prefill_sgemm_peak_gflops > 0 ? "after prefill" : "after the run"},
                      {"sgemm_peak_gflops_after_run", sgemm_after_run},
                      {"prefill_efficiency", prefill_gflops / sgemm_gflops},
                      {"prefill_precision", kernels::gemm_precision_name(dec.prefill_precision())},
                      {"samples", r.samples},
                      {"kv_bytes_peak", kv_peak},
                      {"kv_bytes_per_token", kv_bytes_per_token},
                      {"rss_peak_bytes", rss_peak},
                      {"rss_peak_before_bandwidth_test", true},
                      {"decode_tokens_per_s", 1000.0 / ms_per_token},
                      {"ms_per_token", ms_per_token},
                      {"roofline",
                       {{"copy_bandwidth_gbs", bw},
                        {"active_weight_bytes_per_token", weight_bytes},
                        {std::string("kv_bytes_read_per_token_") + r.kv_read_basis, r.kv_read_bytes},
                        {"roofline_ms_per_token", roofline_ms},
                        {"efficiency", roofline_ms / ms_per_token},
                        {"read_bandwidth_gbs", read_bw},
                        {"read_roofline_ms_per_token", read_roofline_ms},
                        {"read_efficiency", read_roofline_ms / ms_per_token}}}};
  // Per-sample rooflines (--sample-bandwidth): the median efficiency over the samples, each judged
  // by the bandwidth measured right after it.
  std::vector<double> sample_eff, sample_bw;
  for (const auto& s : r.samples)
    if (s.contains("efficiency")) sample_eff.push_back(s["efficiency"].get<double>()), sample_bw.push_back(s["copy_bandwidth_gbs"].get<double>());
  if (!sample_eff.empty()) {
    const auto [eff_min, eff_max] = std::minmax_element(sample_eff.begin(), sample_eff.end());
    const auto [bw_min, bw_max] = std::minmax_element(sample_bw.begin(), sample_bw.end());
    const double eff_median = median(sample_eff), bw_median = median(sample_bw);
    j["roofline"]["per_sample"] = {{"samples", sample_eff.size()},    {"efficiency_median", eff_median},
                                   {"efficiency_min", *eff_min},       {"efficiency_max", *eff_max},
                                   {"copy_bandwidth_gbs_median", bw_median}, {"copy_bandwidth_gbs_min", *bw_min},
                                   {"copy_bandwidth_gbs_max", *bw_max}};
    std::printf("per-sample roofline: median efficiency %.0f%% (%.0f-%.0f%%), copy %.1f GB/s median (%.1f-%.1f)\n", 100 * eff_median,
                100 * *eff_min, 100 * *eff_max, bw_median, *bw_min, *bw_max);
  }
  j.update(r.extra);
  JsonOutput(a.json).write(j);
  std::printf("prefill (%s): %lld tokens in %.1f s, %.1f tokens/s, %.1f GFLOP/s, %.0f%% of the in-run sgemm peak (%.1f GFLOP/s)\n",
              kernels::gemm_precision_name(dec.prefill_precision()), static_cast<long long>(r.ref_tokens), r.prefill_ms / 1e3,
              static_cast<double>(r.ref_tokens) * 1e3 / r.prefill_ms, prefill_gflops, 100.0 * prefill_gflops / sgemm_gflops,
              sgemm_gflops);
  std::printf("decode %s/%s: %.2f tokens/s (%.2f ms/token), KV peak %zu bytes, RSS peak %zu\n"
              "roofline: copy %.1f GB/s -> %.2f ms/token (%.0f%%); read %.1f GB/s -> %.2f ms/token (%.0f%%)\n",
              policy.name().c_str(), kv_types.name().c_str(), 1000.0 / ms_per_token, ms_per_token, kv_peak, rss_peak,
              bw, roofline_ms, 100.0 * roofline_ms / ms_per_token, read_bw, read_roofline_ms,
              100.0 * read_roofline_ms / ms_per_token);
  return 0;
}


int run_decode_pages(const DecodeArgs& a);
// --ref-tokens seeded random token ids: the decoder-only stand-in for image tokens.
std::vector<int32_t> random_reference(const DecodeArgs& a, const Decoder& dec) {
  std::mt19937_64 rng(a.seed);
  std::uniform_int_distribution<int32_t> tok(2, static_cast<int32_t>(dec.config().vocab - 1));
  std::vector<int32_t> ref(static_cast<size_t>(a.ref_tokens));
  for (auto& t : ref) t = tok(rng);
  return ref;
}

// What the decode clock sees, fed by the engine loop's hooks: the first token starts it (after the
// sgemm peak is measured, out of the clock), each --sample-every tokens give a sample of KV bytes
// and ms/token (and, with --sample-bandwidth, the copy bandwidth, paused out of the clock), and
// every decode step adds the KV bytes its query read.
struct DecodeClock {
  const DecodeArgs& a;
  const Decoder& dec;
  ThreadPool& threads;
  DecodeRun& r;
  int64_t g = 0, steps = 0;
  double decode_start = 0, window_start = 0, last = 0, paused_ms = 0, kv_read_bytes_sum = 0;
  size_t kv_bytes = 0, kv_peak = 0;
  int64_t cached_tokens = 0;
  double active_bytes = 0;

  void step(const SequenceKV& kv) {
    ++steps;
    kv_bytes = kv.bytes();
    kv_peak = std::max(kv_peak, kv_bytes);
    cached_tokens = kv.cached_tokens();
    active_bytes = static_cast<double>(kv.active_bytes(kv.length() - 1));
    kv_read_bytes_sum += active_bytes;
  }

  void token() {
    ++g;
    double t = now_ms();
    if (g == 1) {
      r.prefill_sgemm_peak_gflops = kernels::measure_sgemm_gflops(threads);  // before decode's clock starts
      decode_start = window_start = last = now_ms();
      return;
    }
    last = t;
    const int64_t n = g - 1;  // decode steps so far
    if (n % a.sample_every != 0) return;
    const double ms = (t - window_start) / static_cast<double>(a.sample_every);
    nlohmann::json sample = {{"pos", n}, {"kv_bytes", kv_bytes}, {"cached_tokens", cached_tokens}, {"ms_per_token", ms},
                             {"rss_bytes", current_rss_bytes()}};
    std::fprintf(stderr, "  pos %6lld  kv_bytes %12zu  %.2f ms/token", static_cast<long long>(n), kv_bytes, ms);
    if (a.sample_bandwidth) {
      // This sample's own roofline: the bytes its last step read over the bandwidth measured now.
      const double bw = kernels::measure_copy_bandwidth_in_child_gbs(threads.size());
      const double step_bytes = static_cast<double>(dec.active_weight_bytes_per_token()) + active_bytes;
      sample["copy_bandwidth_gbs"] = bw;
      if (bw > 0) sample["efficiency"] = step_bytes / (bw * 1e6) / ms;
      std::fprintf(stderr, "  copy %.1f GB/s", bw);
      const double resumed = now_ms();
      paused_ms += resumed - t;
      t = resumed;
    }
    std::fprintf(stderr, "\n");
    r.samples.push_back(std::move(sample));
    window_start = t;
  }
};

int run_decode(const DecodeArgs& a) {
  const JsonOutput checked(a.json);  // before minutes of work, not after
  if (a.pages > 0) return run_decode_pages(a);
  KVPolicy policy = a.policy.policy();
  const KVTypes kv_types = a.kv.types();
  if (a.ref_tokens < 1 || a.gen_tokens < 1 || a.sample_every < 1) throw_invalid("--ref-tokens, --gen-tokens and --sample-every must be positive");

  LoadedModel m = load_model(a.model, false, a.weights);
  if (a.context > 0) m.decoder->set_context(a.context);
  m.decoder->set_prefill_precision(kernels::gemm_precision_from_name(a.prefill_precision, "--prefill-precision"));
  const ModelConfig& cfg = m.decoder->config();
  if (a.ref_tokens + a.gen_tokens > cfg.max_positions)
    throw_invalid("--ref-tokens + --gen-tokens = " + std::to_string(a.ref_tokens + a.gen_tokens) +
                  " exceeds the model's context of " + std::to_string(cfg.max_positions));
  ThreadPool threads(a.threads);
  KVBlockPool pool(m.decoder->kv_layout(kv_types), 0);
  DecodeRun r;
  r.ref_tokens = a.ref_tokens;
  r.samples = nlohmann::json::array();
  // Through the engine loop, as every path decodes: the reference prefilled in --prefill-chunk
  // passes, then --gen-tokens decode steps, greedy, EOS ignored. The first token comes from the
  // prefill's logits, so one more token than steps is asked for.
  GenerationOptions opt;
  opt.policy = policy;
  opt.prefill_chunk = a.prefill_chunk;
  opt.max_tokens = a.gen_tokens + 1;
  opt.stop_at_eos = false;
  DecodeClock clock{a, *m.decoder, threads, r};
  opt.on_step = [&](const SequenceKV& kv) { clock.step(kv); };
  Generator gen(*m.decoder, pool, threads);
  const GenerationResult res = gen.generate(random_reference(a, *m.decoder), opt, [&](int32_t) {
    clock.token();
    return true;
  });
  r.prefill_ms = res.prefill_ms;
  std::fprintf(stderr, "prefill %lld tokens: %.0f ms\n", (long long)a.ref_tokens, r.prefill_ms);
  r.decode_ms = clock.last - clock.decode_start - clock.paused_ms;
  r.kv_peak = std::max(clock.kv_peak, res.kv_bytes_peak);
  r.kv_read_bytes = clock.kv_read_bytes_sum / static_cast<double>(std::max<int64_t>(1, clock.steps));
  return report_decode(a, policy, kv_types, *m.decoder, pool.layout().reference_bytes_per_token(), threads, r);
}

// Bytes of the checkpoint's weight files (every .safetensors file in the directory): what a process
// that touches every weight has mapped.
uint64_t checkpoint_bytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") total += e.file_size(ec);
  return total;
}

// The reference is `--pages` synthetic pages run through the OCR model's own path: its vision tower
// encodes each page when prefill reaches it (Base mode) and its multi-page prompt lays them out, as
// `folio ocr` would for a document of that many pages. Then `--gen-tokens` tokens are decoded with
// the model's decoding recipe (n-gram guard included), end token ignored.
// --pages synthetic pages of --page-width x --page-height: a few distinct ones written once into a
// temporary directory (removed with this object) and cycled, so that writing them does not
// dominate the run.
struct SyntheticPageFiles {
  std::filesystem::path dir;
  std::vector<std::string> files;

  explicit SyntheticPageFiles(const DecodeArgs& a)
      : dir(std::filesystem::temp_directory_path() / ("folio-bench-pages-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
    constexpr int kDistinctPages = 4;
    for (int i = 0; i < a.pages; ++i) {
      const std::string f = (dir / ("page" + std::to_string(i % kDistinctPages) + ".png")).string();
      if (i < kDistinctPages) write_png(synthetic_page(a.page_width, a.page_height, static_cast<unsigned>(7 + i)), f);
      files.push_back(f);
    }
  }
  ~SyntheticPageFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  SyntheticPageFiles(const SyntheticPageFiles&) = delete;
  SyntheticPageFiles& operator=(const SyntheticPageFiles&) = delete;
};

int run_decode_pages(const DecodeArgs& a) {
  const KVPolicy policy = a.policy.policy();
  const KVTypes kv_types = a.kv.types();
  if (a.gen_tokens < 1 || a.sample_every < 1) throw_invalid("--gen-tokens and --sample-every must be positive");
  check_image_size(a.page_width, a.page_height, "--page-width x --page-height");
  std::unique_ptr<OcrModel> model = load_ocr_model(a.model);
  Decoder& dec = model->decoder();
  const int64_t trained_context = dec.config().max_positions;
  if (a.context > 0) dec.set_context(a.context);
  dec.set_prefill_precision(kernels::gemm_precision_from_name(a.prefill_precision, "--prefill-precision"));

  const SyntheticPageFiles page_files(a);
  const OcrPages pages = OcrPages::open(page_files.files, "", model->pdf_dpi());
  ThreadPool threads(a.threads);
  std::vector<double> encode_ms;
  OcrPass pass = model->prepare(pages, 0, pages.size(), VisionMode::Base, threads,
                                [&](size_t, double ms) { encode_ms.push_back(ms); });
  int64_t ref_tokens = 0;
  for (const ReferencePart& part : pass.reference) ref_tokens += static_cast<int64_t>(part.ids.size());
  if (ref_tokens + a.gen_tokens > dec.config().max_positions)
    throw_invalid(std::to_string(a.pages) + " pages (" + std::to_string(ref_tokens) + " reference tokens) + --gen-tokens " +
                  std::to_string(a.gen_tokens) + " exceed the model's context of " + std::to_string(dec.config().max_positions) +
                  " (--context raises it, for speed and memory only)");

  KVBlockPool pool(dec.kv_layout(kv_types), 0);
  GenerationOptions opt{pass.generation};
  opt.policy = policy;
  opt.max_tokens = a.gen_tokens;
  opt.stop_at_eos = false;
  opt.prefill_chunk = a.prefill_chunk;
  nlohmann::json samples = nlohmann::json::array();
  int64_t g = 0;
  double window_start = 0;
  int64_t window_first = 1;
  // The first token comes from the prefill's logits: the clock starts there, and each sample is the
  // mean over the steps since the previous one.
  Generator gen(dec, pool, threads);
  const GenerationResult res = gen.generate(pass.reference, opt, [&](int32_t) {
    ++g;
    const double t = now_ms();
    if (g == 1) window_start = t;
    if (g % a.sample_every == 0) {
      const double ms = (t - window_start) / static_cast<double>(std::max<int64_t>(1, g - window_first));
      samples.push_back({{"pos", g}, {"kv_bytes", pool.bytes_in_use()}, {"ms_per_token", ms}, {"rss_bytes", current_rss_bytes()}});
      std::fprintf(stderr, "  pos %6lld  kv_bytes %12zu  %.2f ms/token  RSS %zu\n", static_cast<long long>(g), pool.bytes_in_use(), ms,
                   current_rss_bytes());
      window_start = t;
      window_first = g;
    }
    return true;
  });
  DecodeRun r;
  r.ref_tokens = ref_tokens;
  r.prefill_ms = res.prefill_ms;
  r.decode_ms = res.decode_ms;
  r.samples = std::move(samples);
  r.kv_peak = res.kv_bytes_peak;
  r.kv_read_bytes = static_cast<double>(res.kv_active_bytes_max);
  r.kv_read_basis = "max";
  r.extra = {{"reference", "pages"},
             {"pages", a.pages},
             {"page_width", a.page_width},
             {"page_height", a.page_height},
             {"vision_mode", "base"},
             {"encode_ms_total", std::accumulate(encode_ms.begin(), encode_ms.end(), 0.0)},
             {"encode_ms_per_page_median", median(encode_ms)},
             {"decoder_weight_bytes", dec.weight_bytes()},
             {"checkpoint_bytes", checkpoint_bytes(a.model)},
             {"trained_context", trained_context},
             {"context", dec.config().max_positions}};
  return report_decode(a, policy, kv_types, dec, pool.layout().reference_bytes_per_token(), threads, r);
}

struct EncodeArgs {
  std::string model, mode = "base", json, precision = "auto";
  int runs = 5, threads = 0, page_width = 2480, page_height = 3508;  // A4 at 300 DPI
};


// What each timed encoder run measured (one entry per run; tile_ms one per tile).
struct EncodeRuns {
  std::vector<double> pre_ms, global_ms, tile_ms, assemble_ms, page_ms, peak_gflops, view_gflops, efficiency;
  std::vector<double> bf16_peak_gflops, bf16_efficiency;  // runs whose products are bf16
  int64_t tokens = 0, n_tiles = 0;
};

// One page through preprocessing, the views and assembly, timed, with the sgemm peak just before:
// shared machines swing by 2x between minutes, so an efficiency is only meaningful against a peak
// measured beside it.
void time_encode_run(const DeepEncoder& enc, const RgbImage& page, VisionMode mode, ThreadPool& threads, EncodeRuns& r) {
  r.peak_gflops.push_back(kernels::measure_sgemm_gflops(threads));
  const bool bf16 = enc.precision() == kernels::GemmPrecision::Bf16;
  if (bf16) r.bf16_peak_gflops.push_back(kernels::measure_bf16_gemm_gflops(threads));
  const double t0 = now_ms();
  const PagePixels px = preprocess_page(page, mode);
  const double t1 = now_ms();
  const ViewFeatures g = enc.encode_view(px.global.data(), kGlobalViewSide, threads);
  const double t2 = now_ms();
  std::vector<ViewFeatures> tiles;
  r.n_tiles = px.grid.has_tiles() ? px.grid.cols * px.grid.rows : 0;
  for (int64_t t = 0; t < r.n_tiles; ++t) {
    const double s = now_ms();
    tiles.push_back(enc.encode_view(px.tiles.data() + t * 3 * kTileSide * kTileSide, kTileSide, threads));
    r.tile_ms.push_back(now_ms() - s);
  }
  const double t3 = now_ms();
  const std::vector<float> rows = enc.assemble(g, tiles, TileLayout{px.grid.cols, px.grid.rows});
  const double t4 = now_ms();
  r.tokens = static_cast<int64_t>(rows.size()) / enc.config().n_embed;
  r.pre_ms.push_back(t1 - t0);
  r.global_ms.push_back(t2 - t1);
  r.assemble_ms.push_back(t4 - t3);
  r.page_ms.push_back(t4 - t0);
  const double flops = encoder_view_flops(enc.config(), kGlobalViewSide).total() +
                       static_cast<double>(r.n_tiles) * encoder_view_flops(enc.config(), kTileSide).total();
  r.view_gflops.push_back(flops / ((t3 - t1) * 1e6));
  r.efficiency.push_back(r.view_gflops.back() / r.peak_gflops.back());
  if (bf16) r.bf16_efficiency.push_back(r.view_gflops.back() / r.bf16_peak_gflops.back());
  std::fprintf(stderr, "  run %zu: %.1f ms (preprocess %.1f, global view %.1f, %lld tiles %.1f), %.1f GFLOP/s, %.0f%% of the sgemm peak %.1f",
               r.page_ms.size(), t4 - t0, t1 - t0, t2 - t1, static_cast<long long>(r.n_tiles), t3 - t2, r.view_gflops.back(),
               100 * r.efficiency.back(), r.peak_gflops.back());
  if (bf16) std::fprintf(stderr, ", %.0f%% of the bf16 peak %.1f", 100 * r.bf16_efficiency.back(), r.bf16_peak_gflops.back());
  std::fprintf(stderr, "\n");
}

int run_encode(const EncodeArgs& a) {
  VisionMode mode;
  if (a.mode == "base") mode = VisionMode::Base;
  else if (a.mode == "gundam") mode = VisionMode::Gundam;
  else throw_invalid("--mode must be base or gundam, got '" + a.mode + "'");
  if (a.runs < 1) throw_invalid("--runs must be at least 1");
  const JsonOutput json_out(a.json);
  check_image_size(a.page_width, a.page_height, "--page-width x --page-height");
  const kernels::GemmPrecision precision = kernels::gemm_precision_from_name(a.precision, "--precision");
  auto model = UnlimitedOcrModel::load(a.model);
  model->set_encoder_precision(precision);
  const char* ran_in = model->encoder_precision();
  const DeepEncoder& enc = model->encoder();
  ThreadPool threads(a.threads);
  const RgbImage page = synthetic_page(a.page_width, a.page_height);
  EncodeRuns r;
  for (int i = 0; i < a.runs; ++i) time_encode_run(enc, page, mode, threads, r);

  const EncoderFlops page_flops = encoder_view_flops(enc.config(), kGlobalViewSide);
  nlohmann::json j = {{"suite", "encode"},
                      {"model", a.model},
                      {"mode", a.mode},
                      {"threads", threads.size()},
                      {"isa", kernels::isa_name(kernels::active_isa())},
                      {"precision", ran_in},
                      {"page_width", a.page_width},
                      {"page_height", a.page_height},
                      {"runs", a.runs},
                      {"image_tokens", r.tokens},
                      {"tiles", r.n_tiles},
                      {"ms_per_page_median", median(r.page_ms)},
                      {"ms_per_page", r.page_ms},
                      {"preprocess_ms_median", median(r.pre_ms)},
                      {"global_view_ms_median", median(r.global_ms)},
                      {"tile_ms_median", median(r.tile_ms)},
                      {"assemble_ms_median", median(r.assemble_ms)},
                      {"global_view_flops", {{"sam", page_flops.sam}, {"clip", page_flops.clip}, {"projector", page_flops.projector}}},
                      {"tile_flops", encoder_view_flops(enc.config(), kTileSide).total()},
                      {"encode_gflops", r.view_gflops},
                      {"encode_gflops_median", median(r.view_gflops)},
                      {"sgemm_peak_gflops", r.peak_gflops},
                      {"sgemm_peak_gflops_median", median(r.peak_gflops)},
                      {"encode_efficiency", r.efficiency},
                      {"encode_efficiency_median", median(r.efficiency)},
                      {"bf16_peak_gflops", r.bf16_peak_gflops},
                      {"bf16_peak_gflops_median", median(r.bf16_peak_gflops)},
                      {"encode_efficiency_bf16", r.bf16_efficiency},
                      {"encode_efficiency_bf16_median", median(r.bf16_efficiency)},
                      {"rss_peak_bytes", peak_rss_bytes()}};
  json_out.write(j);
  std::printf("encode %s %dx%d (%s products): %.1f ms/page median of %d (global view %.1f ms, %lld tiles at %.1f ms), "
              "%lld image tokens, %.1f GFLOP/s = %.0f%% of the in-run sgemm peak (median)",
              a.mode.c_str(), a.page_width, a.page_height, ran_in, median(r.page_ms), a.runs, median(r.global_ms),
              static_cast<long long>(r.n_tiles), median(r.tile_ms), static_cast<long long>(r.tokens), median(r.view_gflops),
              100 * median(r.efficiency));
  if (!r.bf16_efficiency.empty()) std::printf(", %.0f%% of the bf16 peak", 100 * median(r.bf16_efficiency));
  std::printf(", RSS peak %zu\n", peak_rss_bytes());
  return 0;
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto a = std::make_shared<DecodeArgs>();
  app.require_subcommand(1);
  CLI::App* d = app.add_subcommand("decode", "KV bytes and ms/token as the output grows");
  d->add_option("--model", a->model, "Checkpoint directory or .gguf file")->required();
  add_policy_options(*d, a->policy);
  add_kv_options(*d, a->kv);
  d->add_option("--weights", a->weights,
                std::string("Re-store the decoder's linears at load: ") + weight_scheme_names());
  d->add_option("--ref-tokens", a->ref_tokens, "Reference (prefill) tokens P")->capture_default_str();
  d->add_option("--gen-tokens", a->gen_tokens, "Generated tokens N")->capture_default_str();
  d->add_option("--threads", a->threads, "Threads (0 = one per core)")->capture_default_str();
  d->add_option("--sample-every", a->sample_every, "Record a sample every K generated tokens")->capture_default_str();
  d->add_option("--prefill-chunk", a->prefill_chunk, "Reference tokens per forward pass")->capture_default_str();
  d->add_option("--prefill-precision", a->prefill_precision,
                "Arithmetic of the prefill's products: auto (bf16 where the CPU has AVX512-BF16), f32 or bf16")
      ->capture_default_str();
  d->add_option("--seed", a->seed, "Seed of the synthetic reference")->capture_default_str();
  d->add_option("--pages", a->pages,
                 "OCR models: the reference is this many synthetic pages encoded by the model (Base mode) instead of --ref-tokens")
      ->check(CLI::Range(1, 100000));
  d->add_option("--page-width", a->page_width, "Synthetic page width in pixels (--pages)")->capture_default_str();
  d->add_option("--page-height", a->page_height, "Synthetic page height in pixels (--pages)")->capture_default_str();
  d->add_option("--context", a->context,
                 "Allow positions up to this many instead of the checkpoint's context (RoPE continues past its trained range: "
                 "speed and memory only)")
      ->check(CLI::PositiveNumber);
  d->add_flag("--sample-bandwidth", a->sample_bandwidth,
              "Measure the copy bandwidth again at every sample (child process, untimed): each sample gets its own efficiency");
  d->add_flag("--synthetic-ref", a->synthetic_ref, "Reference of random token ids (the only kind for decoder-only models)");
  d->add_option("--json", a->json, "Output JSON file")->required();
  auto e = std::make_shared<EncodeArgs>();
  const SubRunner acc = add_bench_accuracy(app);
  const SubRunner srv = add_bench_serve(app);
  const SubRunner rep = add_bench_report(app);
  const SubRunner div = add_bench_divergence(app);
  const SubRunner ker = add_bench_kernels(app);
  CLI::App* en = app.add_subcommand("encode", "Vision encoder milliseconds per page (Unlimited-OCR DeepEncoder)");
  en->add_option("--model", e->model, "OCR model directory")->required();
  en->add_option("--mode", e->mode, "base (1024 view) or gundam (plus 640 tiles)")->capture_default_str();
  en->add_option("--runs", e->runs, "Timed runs (the median is reported)")->capture_default_str();
  en->add_option("--threads", e->threads, "Threads (0 = one per core)")->capture_default_str();
  en->add_option("--page-width", e->page_width, "Synthetic page width in pixels")->capture_default_str();
  en->add_option("--page-height", e->page_height, "Synthetic page height in pixels")->capture_default_str();
  en->add_option("--precision", e->precision,
                 "Arithmetic of the encoder's products: auto (bf16 where the CPU has AVX512-BF16), f32 or bf16")
      ->capture_default_str();
  en->add_option("--json", e->json, "Output JSON file")->required();
  return [a, d, e, en, acc, srv, rep, div, ker]() -> int {
    if (d->parsed()) return run_decode(*a);
    if (en->parsed()) return run_encode(*e);
    if (acc.app->parsed()) return acc.run();
    if (srv.app->parsed()) return srv.run();
    if (rep.app->parsed()) return rep.run();
    if (div.app->parsed()) return div.run();
    if (ker.app->parsed()) return ker.run();
    return 2;
  };
}

}  // namespace folio::cli
