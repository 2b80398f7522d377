// folio ocr: PDFs and images in, markdown (and JSON) out, through an OCR model.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cmdline/commands.h"
#include "doc/ocr_document_writer.h"
#include "model/quantized_weights.h"
#include "core/error.h"
#include "core/memory_stats.h"
#include "kernels/cpu/matmul.h"
#include "core/thread_pool.h"
#include "cmdline/kv_options.h"
#include "runtime/default_model.h"
#include "runtime/ocr_figure_files.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_passes_in_flight.h"
#include "runtime/ocr_pipeline.h"

namespace folio::cli {

namespace {

struct OcrArgs {
  std::vector<std::string> inputs;
  std::string model, mmproj, mode = "base", pages, out, json, figures, weights, encoder_precision = "auto",
      prefill_precision = "auto";
  KVOptions kv;
  PolicyOptions policy;
  int64_t max_tokens = 0, kv_budget = 0;
  bool policy_given = false;
  size_t pages_per_pass = 0;
  size_t passes_in_flight = 0;  // 0 = automatic_passes_in_flight
  size_t prefix_cache_bytes = 0;
  int threads = 0;
  double dpi = 0;  // 0: the model's choice (300 for Unlimited-OCR)
  bool stream = false, quiet = false;
};

std::string human_bytes(size_t b) {
  char buf[32];
  if (b >= (1u << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1u << 30));
  else if (b >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1u << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

// The pipeline's options from the command line's (InvalidInput naming the option at fault).
OcrOptions ocr_options(const OcrArgs& a) {
  OcrOptions opt;
  if (a.mode == "base") opt.mode = VisionMode::Base;
  else if (a.mode == "gundam") opt.mode = VisionMode::Gundam;
  else throw_invalid("--mode must be base or gundam, got '" + a.mode + "'");
  opt.policy = a.policy.policy();
  a.kv.apply(opt);
  if (a.max_tokens < 0) throw_invalid("--max-tokens must not be negative, got " + std::to_string(a.max_tokens));
  opt.max_tokens = a.max_tokens;
  opt.pages_per_pass = a.pages_per_pass;
  opt.passes_in_flight = a.passes_in_flight;
  if (a.prefix_cache_bytes > 0 && !opt.kv_offload_dir.empty())
    throw_invalid("--prefix-cache-bytes does not combine with --kv-offload (an offloaded reference is read from the store)");
  opt.prefix_cache_bytes = a.prefix_cache_bytes;
  if (a.kv_budget < 0) throw_invalid("--kv-budget must not be negative, got " + std::to_string(a.kv_budget));
  opt.kv_budget = static_cast<size_t>(a.kv_budget);
  if (a.dpi < 0) throw_invalid("--dpi must be positive, got " + std::to_string(a.dpi));
  return opt;
}

// Streamed text to stdout; a progress line on stderr for a person watching a terminal (streamed
// text on that same terminal is its own progress: redrawing a line there would overwrite it).
OcrCallbacks ocr_callbacks(const OcrArgs& a, bool progress) {
  OcrCallbacks cb;
  if (a.stream)
    cb.on_text = [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };
  if (progress)
    cb.on_progress = [last = std::chrono::steady_clock::time_point{}, encoded = size_t{0}](const OcrProgress& p) mutable {
      // Redrawn at most 10 times a second (and whenever a page is encoded), not once per token.
      const auto now = std::chrono::steady_clock::now();
      if (p.pages_encoded == encoded && now - last < std::chrono::milliseconds(100)) return;
      last = now;
      encoded = p.pages_encoded;
      std::fprintf(stderr, "\r\033[Kpages %zu/%zu encoded  pass %zu/%zu  %lld tokens  %.1f tok/s  KV %s", p.pages_encoded,
                   p.pages_total, p.pass, p.passes, static_cast<long long>(p.tokens), p.tokens_per_s,
                   human_bytes(p.kv_bytes).c_str());
      std::fflush(stderr);
    };
  return cb;
}

// Pages to the document writer as the pipeline hands them over (their JSON entries only when a
// JSON file is written), their figures first to files when they are written.
class WriterSink : public OcrPageSink {
 public:
  WriterSink(OcrDocumentWriter& writer, const OcrPages& pages, bool json, OcrFigureFiles* figures)
      : writer_(writer), pages_(pages), json_(json), figures_(figures) {}
  void page(size_t index, OcrPage page) override {
    if (figures_) figures_->write(index, page);
    writer_.page(index, page, json_ ? ocr_page_entry(pages_, index, page) : nlohmann::json());
  }

 private:
  OcrDocumentWriter& writer_;
  const OcrPages& pages_;
  bool json_;
  OcrFigureFiles* figures_;
};

// Where figures go: --figures DIR, else beside --out (doc.md: doc_files/), else nowhere (markdown on
// stdout keeps each figure's box in a comment). Links are relative to the markdown's folder.
std::unique_ptr<OcrFigureFiles> figure_files(const OcrArgs& a, double dpi) {
  namespace fs = std::filesystem;
  if (a.figures.empty() && a.out.empty()) return nullptr;
  const std::string dir = a.figures.empty() ? figure_dir_for(a.out) : a.figures;
  std::string link = dir;
  if (!a.out.empty()) {
    const fs::path base = fs::absolute(fs::path(a.out)).parent_path();
    link = fs::absolute(fs::path(dir)).lexically_normal().lexically_relative(base.lexically_normal()).string();
  }
  if (!link.empty() && link.back() != '/') link += '/';
  return std::make_unique<OcrFigureFiles>(a.inputs, a.pages, dpi, dir, link);
}

// Warnings and the summary to stderr.
void report_ocr_run(const OcrArgs& a, const OcrSummary& r) {
  for (const std::string& w : r.warnings) std::fprintf(stderr, "folio: warning: %s\n", w.c_str());
  if (a.quiet) return;
  const OcrStats& s = r.stats;
  std::fprintf(stderr,
               "folio ocr: %zu page(s) in %zu pass(es), %.1f s; encode %.0f ms, prefill %.0f ms (%lld reference tokens); "
               "%lld tokens at %.1f tok/s (reading %.1f GB/s); KV peak %s\n",
               s.pages, s.passes, s.wall_ms / 1000.0, s.encode_ms, s.prefill_ms, static_cast<long long>(s.reference_tokens),
               static_cast<long long>(s.decode_tokens), s.tokens_per_s, decode_read_gbs(s), human_bytes(s.kv_bytes_peak).c_str());
}

int run_ocr_command(const OcrArgs& a) {
  OcrOptions opt = ocr_options(a);
  // No --model: the shipped model ($FOLIO_MODEL, or found next to the executable / source tree).
  const std::string model_dir = a.model.empty() ? default_ocr_model_dir() : a.model;
  // The model first (it maps its weights, nothing more) because it says which DPI its pages want.
  const kernels::GemmPrecision precision = kernels::gemm_precision_from_name(a.encoder_precision, "--encoder-precision");
  std::unique_ptr<OcrModel> model = load_ocr_model(model_dir, a.weights, a.mmproj);
  if (!model->set_encoder_precision(precision) && a.encoder_precision == "bf16" && !a.quiet)
    std::fprintf(stderr, "folio: warning: --encoder-precision bf16: %s's encoder has no bf16 path, it runs in f32\n",
                 model->name().c_str());
  const kernels::GemmPrecision prefill = kernels::gemm_precision_from_name(a.prefill_precision, "--prefill-precision");
  if (!model->set_prefill_precision(prefill) && a.prefill_precision == "bf16" && !a.quiet)
    std::fprintf(stderr, "folio: warning: --prefill-precision bf16: %s's decoder prefills in f32\n", model->name().c_str());
  OcrPages pages = OcrPages::open(a.inputs, a.pages, a.dpi > 0 ? a.dpi : model->pdf_dpi());
  ThreadPool threads(a.threads);
  if (opt.kv_budget > 0 && !a.policy_given) {
    // The budget chooses: rswa while the whole document fits, rolling when it would not.
    std::string why;
    opt.policy = policy_for_budget(*model, pages, opt, why);
    if (!opt.policy.rolls() && opt.pages_per_pass == 0)
      opt.pages_per_pass = std::min(pages.size(), model->max_pages_per_pass(opt.mode));
    if (!a.quiet) std::fprintf(stderr, "folio ocr: %s\n", why.c_str());
  }
  // Passes side by side when the user does not say, their KV within half of the memory available.
  if (opt.passes_in_flight == 0)
    opt.passes_in_flight = automatic_passes_in_flight(*model, pages, opt, a.stream, available_memory_bytes() / 2);
  // The markdown goes to --out, or to stdout page by page (unless --stream prints the text there);
  // the JSON to --json, page by page too: memory holds a few passes, not the document. Files are
  // renamed into place once whole (doc/ocr_document_writer.h).
  OcrOutputTargets targets;
  targets.markdown_path = a.out;
  if (a.out.empty() && !a.stream) targets.markdown_stream = stdout;
  targets.json_path = a.json;
  OcrDocumentWriter writer(targets, pages.size(), ocr_json_head(*model, opt));
  std::unique_ptr<OcrFigureFiles> figures = figure_files(a, a.dpi > 0 ? a.dpi : model->pdf_dpi());
  WriterSink sink(writer, pages, !a.json.empty(), figures.get());
  // Text on the terminal (streamed, or markdown page by page) is its own progress.
  const bool text_on_terminal = (a.stream || targets.markdown_stream) && isatty(STDOUT_FILENO);
  const bool progress = !a.quiet && isatty(STDERR_FILENO) && !text_on_terminal;
  const OcrSummary r = run_ocr_pages(*model, pages, opt, threads, sink, ocr_callbacks(a, progress));
  if (progress) std::fputs("\r\033[K", stderr);
  if (a.stream) std::fputs("\n", stdout);
  writer.finish(ocr_json_tail(*model, opt, r));
  report_ocr_run(a, r);
  return 0;
}

}  // namespace

Runner add_ocr(CLI::App& app) {
  auto a = std::make_shared<OcrArgs>();
  app.add_option("files", a->inputs, "PDFs, PNG/JPEG images, or directories of images (pages in order)")->required();
  app.add_option("--model", a->model, "OCR model directory (config.json + model.safetensors + tokenizer.json; default: $FOLIO_MODEL or the shipped model), or a .gguf text model with --mmproj");
  app.add_option("--mmproj", a->mmproj, "With --model TEXT.gguf: llama.cpp's mmproj file holding the vision tower");
  app.add_option("--weights", a->weights,
                 std::string("Re-store the decoder's linears at load: ") + weight_scheme_names());
  app.add_option("--mode", a->mode, "base (1024 view) or gundam (plus 640 tiles; one page per pass)")->capture_default_str();
  app.add_option("--encoder-precision", a->encoder_precision,
                 "Arithmetic of the vision encoder's products (Unlimited-OCR): auto (bf16 where the CPU has AVX512-BF16, "
                 "about 1.6x faster), f32, or bf16 (inputs rounded to bf16, sums in f32)")
      ->capture_default_str();
  app.add_option("--prefill-precision", a->prefill_precision,
                 "Arithmetic of the decoder's prefill products (Unlimited-OCR): auto (bf16 where the CPU has AVX512-BF16), "
                 "f32, or bf16 (inputs and weights rounded to bf16, sums in f32)")
      ->capture_default_str();
  app.add_option("--pages", a->pages, "Pages to read, numbered across all inputs, e.g. 1-20 or 2,5-7 (default all)");
  app.add_option("--out", a->out, "Write the markdown here (default: stdout)");
  app.add_option("--json", a->json, "Write blocks, labels and boxes (page pixels) as JSON here");
  app.add_option("--figures", a->figures,
                 "Write each figure as a PNG in this folder, linked from the markdown (default with --out doc.md: doc_files/; "
                 "without --out and --figures the markdown keeps each figure's box in a comment)");
  add_policy_options(app, a->policy);
  app.add_option("--max-tokens", a->max_tokens, "Generated tokens per pass at most (0 = until EOS or the context is full)")
      ->capture_default_str();
  app.add_option("--pages-per-pass", a->pages_per_pass, "Pages per decoder pass (0 = automatic: up to 20, half the context)")
      ->capture_default_str();
  app.add_option("--passes-in-flight", a->passes_in_flight,
                 "Passes decoded side by side, each step reading the weights once for all (the same text; the KV holds that many "
                 "passes at once). 0 = automatic: up to 4 when the document takes several passes (8 where AMX tiles run "
                 "the products), their KV within half the memory available, 1 with --kv-budget, "
                 "--kv-offload, --stream or rolling")
      ->capture_default_str();
  app.add_option("--prefix-cache-bytes", a->prefix_cache_bytes,
                 "Reference KV of finished passes kept for later ones (0 = none): a pass whose reference starts with the same "
                 "parts (the prompt, the same pages) restores them instead of prefilling, as folio serve's prefix cache does")
      ->capture_default_str();
  add_kv_options(app, a->kv, true);
  app.add_option("--kv-budget", a->kv_budget,
                 "KV cache bytes at most (0 = unlimited); without --policy, chooses rswa while the whole document fits "
                 "and rolling when it would not")
      ->capture_default_str();
  app.add_option("--threads", a->threads, "Worker threads (0 = one per core)")->capture_default_str();
  app.add_option("--dpi", a->dpi, "PDF rendering resolution (0 = the model's, 300 for Unlimited-OCR)")->capture_default_str();
  app.add_flag("--stream", a->stream, "Print the decoded text to stdout as it comes (then the markdown goes only to --out)");
  app.add_flag("--quiet", a->quiet, "No progress line or summary on stderr");
  return [a, &app]() -> int {
    a->policy_given = app.count("--policy") > 0;
    return run_ocr_command(*a);
  };
}

}  // namespace folio::cli
