// folio: long-document inference with a KV cache that does not grow with the output.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <exception>

#include "cmdline/commands.h"
#include "core/error.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_features.h"
#include "runtime/loaded_model.h"

namespace {

// FOLIO_ISA=scalar|avx2|avx512 runs the kernels on that instruction set (at most what the CPU
// has): to measure or check the AVX2 path on an AVX-512 machine. Results are the same bits on
// each wherever the kernels promise it (int8, quantised GEMV, attention).
void apply_isa_override() {
  const char* env = std::getenv("FOLIO_ISA");
  if (!env || !*env) return;
  const auto isa = folio::kernels::isa_from_name(env);
  if (!isa) folio::throw_invalid(std::string("FOLIO_ISA='") + env + "': expected scalar, avx2 or avx512");
  if (*isa > folio::kernels::best_isa())
    std::fprintf(stderr, "folio: FOLIO_ISA=%s, but this CPU has at most %s: using %s\n", env,
                 folio::kernels::isa_name(folio::kernels::best_isa()), folio::kernels::isa_name(folio::kernels::best_isa()));
  folio::kernels::set_isa(*isa);
}

// FOLIO_AMX=0 keeps the bf16 GEMM and the interleaved q4_k / q6_k products on their AVX-512 kernels
// where the CPU has AMX tiles (kernels/cpu/bf16_gemm.h, cpu_features.h), and with them `folio ocr`'s
// automatic passes in flight at 4: to measure one against the other, or to get the bf16 AVX-512
// kernel's bits (the q4_k / q6_k products' are the same either way).
void apply_amx_override() {
  const char* env = std::getenv("FOLIO_AMX");
  if (!env || !*env) return;
  const std::string v = env;
  if (v != "0" && v != "1") folio::throw_invalid("FOLIO_AMX='" + v + "': expected 0 or 1");
  folio::kernels::set_bf16_amx(v == "1");
  folio::kernels::set_int8_amx(v == "1");
}

// Reading a page allocates and frees buffers of the page's size (a rendered page, its gray, ink
// and binary planes) over and over. Under glibc's defaults each of them above the mmap threshold
// is a fresh mapping whose pages the kernel faults in and zeroes on first touch, and freed heap
// tops are trimmed back to the kernel (docs/mini-ocr.md has what it cost). Keeping such buffers in
// the heap lets the next page reuse the same memory; the peak resident size stays that of the
// buffers alive at once.
void keep_page_buffers_in_heap() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  keep_page_buffers_in_heap();
  CLI::App app{"folio: reference + long output inference (R-SWA KV cache)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "folio 0.1.0");
  bool mmap = false;
  app.add_flag("--mmap", mmap,
               "Map the checkpoint's files instead of reading them into huge-page memory: opens at once and shares "
               "the page cache with other processes, but decode runs 10-20% slower (any command; serve: model.mmap)");
  app.fallthrough();  // so --mmap may follow the command's name, as its own options do
  std::vector<std::pair<CLI::App*, folio::cli::Runner>> commands;
  auto add = [&](const char* name, const char* help, folio::cli::Runner (*fn)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.emplace_back(sub, fn(*sub));
  };
  add("generate", "Generate text from a prompt, streaming tokens to stdout", folio::cli::add_generate);
  add("inspect", "Show a checkpoint's architecture, tensors, parameters and KV bytes per token", folio::cli::add_inspect);
  add("convert", "Write a checkpoint as the GGUF files llama.cpp reads (q8_0, q4_k_m, ...)", folio::cli::add_convert);
  add("make-model", "Write a random-weight checkpoint in the published layout", folio::cli::add_make_model);
  add("ocr", "Read PDFs and images into markdown and JSON with an OCR model", folio::cli::add_ocr);
  add("serve", "Serve the model over an OpenAI-compatible HTTP API (see --help for every key)", folio::cli::add_serve);
  add("bench", "Run a benchmark suite and write JSON (see docs/bench-contract.md)", folio::cli::add_bench);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // a bad command line is the user's to fix, like any other bad input
  }
  try {
    apply_isa_override();
    apply_amx_override();
    if (mmap) folio::set_checkpoint_residency(folio::Residency::kMapped);
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const folio::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "folio: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "folio: internal error: %s\n", e.what());
    return 1;
  }
  return 1;
}
