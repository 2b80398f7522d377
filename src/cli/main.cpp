// folio: long-document inference with a KV cache that does not grow with the output.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"folio: reference + long output inference (R-SWA KV cache)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "folio 0.1.0");
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
