// The folio subcommands. Each registers its options on a CLI11 app and returns a runner; main()
// maps folio::Error to exit code 2 (user-fixable) and anything else to 1.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace folio::cli {

using Runner = std::function<int()>;

Runner add_generate(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_convert(CLI::App& app);
Runner add_make_model(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_ocr(CLI::App& app);
Runner add_serve(CLI::App& app);

// A bench suite defined in its own file: its subcommand (to see whether it was chosen) and runner.
struct SubRunner {
  CLI::App* app = nullptr;
  Runner run;
};
SubRunner add_bench_accuracy(CLI::App& bench);
SubRunner add_bench_serve(CLI::App& bench);
SubRunner add_bench_divergence(CLI::App& bench);
SubRunner add_bench_report(CLI::App& bench);
SubRunner add_bench_kernels(CLI::App& bench);

}  // namespace folio::cli
