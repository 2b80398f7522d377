// Helpers the loopback server tests share.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "runtime/model_factory.h"
#include "server/service.h"

namespace folio {

// Value of the Prometheus sample `series` (exact name{labels}) in `text`, or -1 if absent.
inline double metric(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

// A Service bound to its port, serving, with its model loaded.
inline std::unique_ptr<Service> serve_loaded(const ServerConfig& c) {
  auto s = std::make_unique<Service>(c);
  s->bind();
  s->start();
  s->load();
  return s;
}

// A llama of about 57 MB of f32 weights: several ms per token on one thread, so a request of
// 3000 tokens is still running whenever a test looks (or cuts it off).
inline ModelConfig slow_llama_config() {
  ModelConfig slow = preset_config("llama", "tiny");
  slow.hidden = 384;
  slow.n_heads = 8;
  slow.n_kv_heads = 4;
  slow.head_dim = 48;
  slow.n_layers = 8;
  slow.intermediate = 1024;
  slow.max_positions = 4096;
  return slow;
}

}  // namespace folio
