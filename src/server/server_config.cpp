#include "server/server_config.h"

#include "model/quantized_weights.h"
#include "runtime/default_model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "core/error.h"
#include "server/redis_client.h"

namespace folio {

namespace {

enum class Type { String, Int, UInt, Float, Bool };

const char* type_name(Type t) {
  switch (t) {
    case Type::String: return "a string";
    case Type::Int: return "an integer";
    case Type::UInt: return "a non-negative integer";
    case Type::Float: return "a number";
    case Type::Bool: return "true or false";
  }
  return "?";
}

// A parsed value; only the member matching the key's type is meaningful.
struct Value {
  std::string s;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool b = false;
};

struct Key {
  std::string name;
  Type type;
  std::string help;
  // Checks the value's range or choices and stores it; returns "" or what is wrong with it.
  std::function<std::string(ServerConfig&, const Value&)> set;
};

std::string in_range(int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(v);
  return "";
}

// A GEMM precision key (kernels::gemm_precision_from_name's names): stored, and "" or why not.
std::string set_precision(std::string& field, const std::string& v) {
  field = v;
  if (v == "auto" || v == "f32" || v == "bf16") return "";
  return "must be auto, f32 or bf16, got '" + v + "'";
}

std::string one_of(const std::string& v, std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (v == c) return "";
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  return "must be one of " + list + ", got '" + v + "'";
}

const std::vector<Key>& keys() {
  static const std::vector<Key> table = [] {
    std::vector<Key> k;
    k.push_back({"model.path", Type::String, "checkpoint directory or .gguf file (default: the shipped model)",
                 [](ServerConfig& c, const Value& v) { c.model.path = v.s; return std::string(); }});
    k.push_back({"model.weights", Type::String,
                 std::string("re-store the decoder's linears at load: ") + weight_scheme_names() + " (empty: as stored)",
                 [](ServerConfig& c, const Value& v) {
                   c.model.weights = v.s;
                   if (v.s.empty() || parse_weight_scheme(v.s)) return std::string();
                   return "must be one of " + std::string(weight_scheme_names()) + ", got '" + v.s + "'";
                 }});
    k.push_back({"model.mmproj", Type::String, "with a .gguf model.path: its vision tower (llama.cpp's mmproj file), for OCR",
                 [](ServerConfig& c, const Value& v) { c.model.mmproj = v.s; return std::string(); }});
    k.push_back({"model.encoder_precision", Type::String,
                 "the vision encoder's products (OCR models): auto (bf16 where the CPU has AVX512-BF16), f32 or bf16",
                 [](ServerConfig& c, const Value& v) { return set_precision(c.model.encoder_precision, v.s); }});
    k.push_back({"model.prefill_precision", Type::String,
                 "the decoder's prefill products (Unlimited-OCR): auto (bf16 where the CPU has AVX512-BF16), f32 or bf16",
                 [](ServerConfig& c, const Value& v) { return set_precision(c.model.prefill_precision, v.s); }});
    k.push_back({"model.mmap", Type::Bool,
                 "map the checkpoint's files instead of reading them into huge-page memory (opens at once, shares the page cache; decode 10-20% slower)",
                 [](ServerConfig& c, const Value& v) { c.model.mmap = v.b; return std::string(); }});
    k.push_back({"model.served_names", Type::String,
                 "comma-separated names clients may send as 'model', the first one reported ('' = the model directory's name)",
                 [](ServerConfig& c, const Value& v) {
                   c.model.served_names = v.s;
                   for (const std::string& name : comma_list(v.s))
                     if (name.empty()) return "has an empty name: '" + v.s + "'";
                   return std::string();
                 }});
    k.push_back({"model.max_reference_length", Type::Int, "prompt tokens per request at most (0 = the model's context)",
                 [](ServerConfig& c, const Value& v) {
                   c.model.max_reference_length = v.i;
                   return in_range(v.i, 0, int64_t{1} << 40);
                 }});
    k.push_back({"attention.type", Type::String, "reference_sliding_window | full | sparse | rolling",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.type = v.s;
                   return one_of(v.s, {"reference_sliding_window", "full", "sparse", "rolling"});
                 }});
    k.push_back({"attention.decode_window_size", Type::Int, "generated tokens kept by reference_sliding_window",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.decode_window_size = v.i;
                   return in_range(v.i, 1, int64_t{1} << 24);
                 }});
    k.push_back({"attention.sparse_top_k", Type::Int, "sparse: reference units (pages or parts of pages) each layer and KV head reads",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.sparse_top_k = v.i;
                   return in_range(v.i, 1, int64_t{1} << 20);
                 }});
    k.push_back({"attention.sparse_unit_tokens", Type::Int, "sparse: most tokens of one reference unit",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.sparse_unit_tokens = v.i;
                   return in_range(v.i, 1, int64_t{1} << 20);
                 }});
    k.push_back({"attention.sparse_focus_pages", Type::Int, "sparse: pages read whole from the one the model is reading (0 = none)",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.sparse_focus_pages = v.i;
                   return in_range(v.i, 0, 4096);
                 }});
    k.push_back({"attention.sparse_neighbour_pages", Type::Int,
                 "sparse: units chosen only from the pages within this many of the one being read (-1 = any page)",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.sparse_neighbour_pages = v.i;
                   return in_range(v.i, -1, 4096);
                 }});
    k.push_back({"attention.resident_pages", Type::Int, "rolling: pages kept in the reference at once (a page leaves when the model has read it)",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.resident_pages = v.i;
                   return in_range(v.i, 1, 4096);
                 }});
    k.push_back({"attention.kv_keep", Type::Float,
                 "reference_sliding_window, sparse: fraction of each page's reference rows kept once the reference is prefilled (SnapKV; 1 = all, as folio ocr --kv-keep)",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.kv_keep = v.f;
                   if (!(v.f > 0 && v.f <= 1)) return "must be in (0, 1], got " + std::to_string(v.f);
                   return std::string();
                 }});
    k.push_back({"attention.kv_observe", Type::Int, "attention.kv_keep < 1: prompt-tail tokens whose attention scores the reference rows",
                 [](ServerConfig& c, const Value& v) {
                   c.attention.kv_observe = v.i;
                   return in_range(v.i, 1, 4096);
                 }});
    k.push_back({"attention.causal", Type::Bool, "causal attention (the only kind the decoder runs)",
                 [](ServerConfig& c, const Value& v) { c.attention.causal = v.b; return std::string(); }});
    k.push_back({"inference.kv_rotate", Type::Bool, "store keys and values rotated per head by a Walsh-Hadamard transform (as folio ocr --kv-rotate): q4 KV keeps its accuracy",
                 [](ServerConfig& c, const Value& v) { c.inference.kv_rotate = v.b; return std::string(); }});
    k.push_back({"inference.max_output_length", Type::Int, "generated tokens per request at most",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.max_output_length = v.i;
                   return in_range(v.i, 1, int64_t{1} << 30);
                 }});
    k.push_back({"inference.batch_size", Type::Int, "sequences decoded together at most",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.batch_size = v.i;
                   return in_range(v.i, 1, 4096);
                 }});
    k.push_back({"inference.dtype", Type::String, "weight dtype: auto (as stored in the checkpoint)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.dtype = v.s;
                   return one_of(v.s, {"auto", "f32", "f16", "bf16"});
                 }});
    k.push_back({"inference.kv_dtype", Type::String, "KV cache storage: f32 | f16 | bf16 | q8 | q4",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.kv_dtype = v.s;
                   return one_of(v.s, {"f32", "f16", "bf16", "q8", "q4"});
                 }});
    k.push_back({"inference.kv_dtype_k", Type::String, "storage of cached keys, overriding inference.kv_dtype (\"\" = as it)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.kv_dtype_k = v.s;
                   return v.s.empty() ? std::string() : one_of(v.s, {"f32", "f16", "bf16", "q8", "q4"});
                 }});
    k.push_back({"inference.kv_dtype_v", Type::String, "storage of cached values, overriding inference.kv_dtype (\"\" = as it)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.kv_dtype_v = v.s;
                   return v.s.empty() ? std::string() : one_of(v.s, {"f32", "f16", "bf16", "q8", "q4"});
                 }});
    k.push_back({"inference.kv_dtype_window", Type::String, "storage of the generated tokens' window, keys and values (\"\" = as the others)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.kv_dtype_window = v.s;
                   return v.s.empty() ? std::string() : one_of(v.s, {"f32", "f16", "bf16", "q8", "q4"});
                 }});
    k.push_back({"inference.kv_budget_bytes", Type::UInt, "KV pool capacity in bytes (0 = unlimited)",
                 [](ServerConfig& c, const Value& v) { c.inference.kv_budget_bytes = v.u; return std::string(); }});
    k.push_back({"inference.max_queued_requests", Type::Int, "requests waiting for admission at most (more get 503)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.max_queued_requests = v.i;
                   return in_range(v.i, 1, 1 << 20);
                 }});
    k.push_back({"inference.prefill_chunk", Type::Int, "prompt tokens prefilled per scheduler step",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.prefill_chunk = v.i;
                   return in_range(v.i, 1, 1 << 20);
                 }});
    k.push_back({"inference.batch_invariant", Type::Bool,
                 "each request's greedy tokens exactly as when it runs alone (false: one forward pass per step, rows mixed)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.batch_invariant = v.b;
                   return std::string();
                 }});
    k.push_back({"inference.threads", Type::Int, "compute threads (0 = one per core)",
                 [](ServerConfig& c, const Value& v) {
                   c.inference.threads = v.i;
                   return in_range(v.i, 0, 1024);
                 }});
    k.push_back({"inference.reference_cache_bytes", Type::UInt, "bytes of prepared OCR references kept for reuse (0 = none)",
                 [](ServerConfig& c, const Value& v) { c.inference.reference_cache_bytes = v.u; return std::string(); }});
    k.push_back({"inference.prefix_cache_bytes", Type::UInt, "bytes of reference KV kept, so a request repeating a reference's leading parts skips their prefill (0 = none)",
                 [](ServerConfig& c, const Value& v) { c.inference.prefix_cache_bytes = v.u; return std::string(); }});
    k.push_back({"inference.kv_offload_dir", Type::String, "directory of the tiered reference's file tier: complete reference segments leave the KV pool for RAM, then this file ('' = the pool holds everything; needs prefix_cache_bytes: 0)",
                 [](ServerConfig& c, const Value& v) { c.inference.kv_offload_dir = v.s; return std::string(); }});
    k.push_back({"inference.kv_hot_bytes", Type::UInt, "tiered reference: bytes kept in RAM (0 = unlimited)",
                 [](ServerConfig& c, const Value& v) { c.inference.kv_hot_bytes = v.u; return std::string(); }});
    k.push_back({"inference.kv_cold_bytes", Type::UInt, "tiered reference: bytes of the file tier at most",
                 [](ServerConfig& c, const Value& v) { c.inference.kv_cold_bytes = v.u; return std::string(); }});
    k.push_back({"remote.redis", Type::String, "Redis shared by replicas for prepared OCR references (host:port or redis://host:port; '' = none)",
                 [](ServerConfig& c, const Value& v) {
                   c.remote.redis = v.s;
                   if (!v.s.empty()) parse_redis_address(v.s);  // refuses a malformed address here, naming it
                   return std::string();
                 }});
    k.push_back({"remote.ttl_s", Type::Int, "seconds a value stays in Redis (0 = until Redis's maxmemory policy evicts it)",
                 [](ServerConfig& c, const Value& v) {
                   c.remote.ttl_s = v.i;
                   return in_range(v.i, 0, int64_t{1} << 31);
                 }});
    k.push_back({"remote.timeout_ms", Type::Int, "Redis connect, send and receive deadline each; past it the tier is a miss",
                 [](ServerConfig& c, const Value& v) {
                   c.remote.timeout_ms = v.i;
                   return in_range(v.i, 1, 60000);
                 }});
    k.push_back({"remote.retry_s", Type::Float, "after a Redis failure, seconds before the next attempt",
                 [](ServerConfig& c, const Value& v) {
                   c.remote.retry_s = v.f;
                   if (!(v.f >= 0) || !std::isfinite(v.f)) return "must be a finite number >= 0, got " + std::to_string(v.f);
                   return std::string();
                 }});
    k.push_back({"remote.claim_wait_s", Type::Float, "seconds a replica waits for pages another replica is encoding (0 = every replica encodes what it lacks)",
                 [](ServerConfig& c, const Value& v) {
                   c.remote.claim_wait_s = v.f;
                   if (!(v.f >= 0) || !std::isfinite(v.f)) return "must be a finite number >= 0, got " + std::to_string(v.f);
                   return std::string();
                 }});
    k.push_back({"server.host", Type::String, "address to listen on",
                 [](ServerConfig& c, const Value& v) {
                   c.server.host = v.s;
                   return v.s.empty() ? std::string("must not be empty") : std::string();
                 }});
    k.push_back({"server.port", Type::Int, "TCP port (0 = any free port)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.port = v.i;
                   return in_range(v.i, 0, 65535);
                 }});
    k.push_back({"server.health_path", Type::String, "liveness path",
                 [](ServerConfig& c, const Value& v) {
                   c.server.health_path = v.s;
                   if (v.s.size() < 2 || v.s[0] != '/') return "must be a path starting with '/', got '" + v.s + "'";
                   for (const char* taken : {"/readyz", "/metrics", "/v1/"})
                     if (v.s.rfind(taken, 0) == 0) return "must not collide with " + std::string(taken) + ", got '" + v.s + "'";
                   return std::string();
                 }});
    k.push_back({"server.api_keys_file", Type::String, "file of accepted API keys, one per line ('' = no authentication)",
                 [](ServerConfig& c, const Value& v) { c.server.api_keys_file = v.s; return std::string(); }});
    k.push_back({"server.rate_limit", Type::Float, "requests per minute per API key (0 = unlimited)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.rate_limit = v.f;
                   if (!(v.f >= 0) || !std::isfinite(v.f)) return "must be a finite number >= 0, got " + std::to_string(v.f);
                   return std::string();
                 }});
    k.push_back({"server.auth_failures_per_minute", Type::Float,
                 "failed authentications a client address may make per minute (a burst of as many) before it gets 429 (0 = unlimited)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.auth_failures_per_minute = v.f;
                   if (!(v.f >= 0) || !std::isfinite(v.f)) return "must be a finite number >= 0, got " + std::to_string(v.f);
                   return std::string();
                 }});
    k.push_back({"server.max_body_bytes", Type::Int, "request body bytes at most (larger gets 413)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.max_body_bytes = v.i;
                   return in_range(v.i, 1, int64_t{1} << 40);
                 }});
    k.push_back({"server.request_timeout_s", Type::Float, "seconds a request may take, queueing included",
                 [](ServerConfig& c, const Value& v) {
                   c.server.request_timeout_s = v.f;
                   if (!(v.f > 0) || !std::isfinite(v.f)) return "must be a finite number > 0, got " + std::to_string(v.f);
                   return std::string();
                 }});
    auto seconds = [](double ServerConfig::Server::*field) {
      return [field](ServerConfig& c, const Value& v) {
        c.server.*field = v.f;
        if (!(v.f > 0) || !std::isfinite(v.f)) return "must be a finite number > 0, got " + std::to_string(v.f);
        return std::string();
      };
    };
    k.push_back({"server.idle_timeout_s", Type::Float, "seconds a connection may wait for its next request's first byte",
                 seconds(&ServerConfig::Server::idle_timeout_s)});
    k.push_back({"server.header_timeout_s", Type::Float, "seconds from a request's first byte to the end of its headers (and the TLS handshake)",
                 seconds(&ServerConfig::Server::header_timeout_s)});
    k.push_back({"server.body_timeout_s", Type::Float, "seconds to receive a request's body", seconds(&ServerConfig::Server::body_timeout_s)});
    k.push_back({"server.write_timeout_s", Type::Float, "seconds each write of an answer may take", seconds(&ServerConfig::Server::write_timeout_s)});
    k.push_back({"server.max_connections", Type::Int, "open connections at most (more get 503 too_many_connections)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.max_connections = v.i;
                   return in_range(v.i, 1, int64_t{1} << 24);
                 }});
    k.push_back({"server.max_connections_per_client", Type::Int, "open connections per client address at most (0 = no cap; behind a balancer every client is its address)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.max_connections_per_client = v.i;
                   return in_range(v.i, 0, int64_t{1} << 24);
                 }});
    k.push_back({"server.max_pages", Type::Int, "pages per OCR request at most (more get 400)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.max_pages = v.i;
                   return in_range(v.i, 1, 1 << 20);
                 }});
    k.push_back({"server.cors_origins", Type::String,
                 "origins browsers may call from: '*', or comma-separated origins ('' = no CORS headers, preflights get 405)",
                 [](ServerConfig& c, const Value& v) { c.server.cors_origins = v.s; return std::string(); }});
    k.push_back({"server.tls_cert_file", Type::String, "HTTPS: the PEM certificate (chain) to serve ('' = plain HTTP; needs server.tls_key_file)",
                 [](ServerConfig& c, const Value& v) { c.server.tls_cert_file = v.s; return std::string(); }});
    k.push_back({"server.tls_key_file", Type::String, "HTTPS: the PEM private key of server.tls_cert_file",
                 [](ServerConfig& c, const Value& v) { c.server.tls_key_file = v.s; return std::string(); }});
    k.push_back({"server.access_log", Type::String, "where each request's access line goes: '-' (stderr), 'off', or a file (appended)",
                 [](ServerConfig& c, const Value& v) {
                   c.server.access_log = v.s;
                   return v.s.empty() ? std::string("must be '-', 'off' or a file path") : std::string();
                 }});
    k.push_back({"server.log_format", Type::String, "access lines as json (one object per line) or text",
                 [](ServerConfig& c, const Value& v) {
                   c.server.log_format = v.s;
                   return one_of(v.s, {"json", "text"});
                 }});
    k.push_back({"server.log_level", Type::String, "which requests are logged: info (all), warn (status >= 400), error (>= 500), off",
                 [](ServerConfig& c, const Value& v) {
                   c.server.log_level = v.s;
                   return one_of(v.s, {"info", "warn", "error", "off"});
                 }});
    return k;
  }();
  return table;
}

const Key* find_key(const std::string& name) {
  for (const Key& k : keys())
    if (k.name == name) return &k;
  return nullptr;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Parses a textual value (from YAML scalars, env vars and flags alike) as the key's type.
bool parse_value(Type t, const std::string& raw, Value& out) {
  const std::string s = trim(raw);
  switch (t) {
    case Type::String:
      out.s = raw;
      return true;
    case Type::Int: {
      auto r = std::from_chars(s.data(), s.data() + s.size(), out.i);
      return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
    }
    case Type::UInt: {
      auto r = std::from_chars(s.data(), s.data() + s.size(), out.u);
      return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
    }
    case Type::Float: {
      if (s.empty()) return false;
      char* end = nullptr;
      out.f = std::strtod(s.c_str(), &end);
      return end == s.c_str() + s.size();
    }
    case Type::Bool: {
      std::string l = s;
      std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.b = l == "true" || l == "yes" || l == "on" || l == "1";
      return out.b || l == "false" || l == "no" || l == "off" || l == "0";
    }
  }
  return false;
}

// Sets `key` from text; `where` says where the text came from, for the message.
void apply(ServerConfig& cfg, const Key& key, const std::string& raw, const std::string& where) {
  Value v;
  if (!parse_value(key.type, raw, v))
    throw_invalid(where + ": " + key.name + " must be " + type_name(key.type) + ", got '" + raw + "'");
  std::string problem = key.set(cfg, v);
  if (!problem.empty()) throw_invalid(where + ": " + key.name + " " + problem);
}

void apply_yaml(ServerConfig& cfg, const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error(Error::Kind::Io, "config file " + path + " does not exist");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error(Error::Kind::Io, "cannot read config file " + path);
  } catch (const YAML::Exception& e) {
    throw_invalid("config file " + path + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return;  // an empty file: defaults
  if (!root.IsMap()) throw_invalid("config file " + path + ": the top level must be a mapping of sections (model, attention, inference, server)");
  for (const auto& section : root) {
    const std::string sname = section.first.as<std::string>();
    bool known_section = false;
    for (const Key& k : keys()) known_section = known_section || k.name.rfind(sname + ".", 0) == 0;
    if (!known_section) throw_invalid("config file " + path + ": unknown key '" + sname + "' (sections: model, attention, inference, server)");
    if (section.second.IsNull()) continue;
    if (!section.second.IsMap()) throw_invalid("config file " + path + ": '" + sname + "' must be a mapping of keys");
    for (const auto& item : section.second) {
      const std::string name = sname + "." + item.first.as<std::string>();
      const Key* key = find_key(name);
      if (!key) throw_invalid("config file " + path + ": unknown key '" + name + "'");
      const std::string where = "config file " + path + " line " + std::to_string(item.second.Mark().line + 1);
      if (item.second.IsNull()) {
        if (key->type != Type::String) throw_invalid(where + ": " + name + " must be " + type_name(key->type) + ", got nothing");
        apply(cfg, *key, "", where);
        continue;
      }
      if (!item.second.IsScalar()) throw_invalid(where + ": " + name + " must be " + type_name(key->type) + ", got a list or mapping");
      apply(cfg, *key, item.second.Scalar(), where);
    }
  }
}

}  // namespace

const std::vector<std::string>& server_config_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Key& k : keys()) n.push_back(k.name);
    return n;
  }();
  return names;
}

std::string server_config_help(const std::string& key) {
  const Key* k = find_key(key);
  return k ? k->help : "";
}

std::string config_env_var(const std::string& key) {
  std::string v = "FOLIO_";
  for (char c : key) v += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v;
}

std::map<std::string, std::string> config_environment() {
  std::map<std::string, std::string> env;
  for (const std::string& k : server_config_keys()) {
    const std::string var = config_env_var(k);
    if (const char* v = std::getenv(var.c_str())) env[var] = v;
  }
  return env;
}

ServerConfig load_server_config(const ConfigSources& src) {
  ServerConfig cfg;
  if (!src.yaml_path.empty()) apply_yaml(cfg, src.yaml_path);
  for (const Key& k : keys()) {
    if (src.flags.count(k.name)) continue;  // the flag wins; a bad value it overrides does not matter
    auto it = src.env.find(config_env_var(k.name));
    if (it != src.env.end()) apply(cfg, k, it->second, "environment variable " + it->first);
  }
  for (const auto& [name, value] : src.flags) {
    const Key* k = find_key(name);
    if (!k) throw_invalid("unknown option --" + name);
    apply(cfg, *k, value, "option --" + name);
  }
  // Offloaded reference KV is read from the store; copies kept for reuse would sit in RAM again.
  if (!cfg.inference.kv_offload_dir.empty() && cfg.inference.prefix_cache_bytes > 0)
    throw_invalid("inference.kv_offload_dir does not combine with the prefix cache: set inference.prefix_cache_bytes to 0 "
                  "(--inference.prefix_cache_bytes 0) to offload reference KV");
  return cfg;
}

std::vector<std::string> comma_list(const std::string& value) {
  std::vector<std::string> out;
  for (size_t at = 0; !value.empty() && at <= value.size();) {
    const size_t comma = std::min(value.find(',', at), value.size());
    out.push_back(value.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::string resolved_model_path(const ServerConfig& cfg) {
  return cfg.model.path.empty() ? default_ocr_model_dir() : cfg.model.path;
}

}  // namespace folio
