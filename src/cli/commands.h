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
Runner add_make_model(CLI::App& app);
Runner add_bench(CLI::App& app);

}  // namespace folio::cli
