#include <CLI/CLI.hpp>
#include <malloc.h>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <pthread.h>

#include "cmdline/commands.h"
#include "core/error.h"
#include "runtime/loaded_model.h"
#include "server/server_config.h"
#include "server/service.h"

namespace folio::cli {

namespace {

struct ServeArgs {
  std::string config;
  std::map<std::string, std::string> values;  // dotted key -> value, for the flags given
  std::map<std::string, CLI::Option*> options;
};

}  // namespace

Runner add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  app.add_option("--config", a->config, "YAML config file (keys: see below; flags > FOLIO_* env > file > defaults)");
  // model.path and model.mmproj also take folio ocr's spellings, --model and --mmproj.
  const std::map<std::string, std::string> aliases = {{"model.path", ",--model"}, {"model.mmproj", ",--mmproj"}};
  for (const std::string& key : server_config_keys()) {
    const auto alias = aliases.find(key);
    a->options[key] = app.add_option("--" + key + (alias == aliases.end() ? "" : alias->second), a->values[key],
                                     server_config_help(key) + " [env " + config_env_var(key) + "]");
  }
  return [a]() -> int {
    ConfigSources src;
    src.yaml_path = a->config;
    src.env = config_environment();
    for (const auto& [key, opt] : a->options)
      if (opt->count() > 0) src.flags[key] = a->values[key];
    ServerConfig cfg = load_server_config(src);
    if (cfg.model.mmap) set_checkpoint_residency(Residency::kMapped);
    const std::string model_path = resolved_model_path(cfg);
    if (!std::filesystem::exists(model_path)) throw_invalid("model.path: " + model_path + " does not exist");
    // Few malloc arenas: the server has a hundred HTTP threads, and glibc's default (8 per core)
    // lets freed memory scatter over many arenas, so RSS creeps up for thousands of requests
    // (docs/measurements.md).
    mallopt(M_ARENA_MAX, 2);
    Service svc(cfg);
    // SIGTERM / SIGINT are taken by sigwait below; block them before any thread starts so that
    // every thread inherits the mask and none of them is interrupted instead.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    const int port = svc.bind();
    svc.start();
    try {
      svc.load();
    } catch (...) {
      svc.shutdown();
      svc.wait();
      throw;
    }
    std::fprintf(stderr, "folio: serving %s on %s://%s:%d\n", svc.model_id().c_str(), cfg.server.tls_cert_file.empty() ? "http" : "https",
                 cfg.server.host.c_str(), port);
    std::fflush(stderr);
    int sig = 0;
    sigwait(&sigs, &sig);
    std::fprintf(stderr, "folio: %s received: draining in-flight requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    svc.shutdown(std::chrono::milliseconds(static_cast<int64_t>(cfg.server.request_timeout_s * 1000)));
    svc.wait();
    std::fprintf(stderr, "folio: stopped\n");
    return 0;
  };
}

}  // namespace folio::cli
