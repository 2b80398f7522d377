// ServerConfig: every setting of `folio serve`, from defaults, a YAML file, FOLIO_* environment
// variables and dotted command-line flags.
//
// Each key has one dotted name (`server.port`) used everywhere: the YAML path (server: {port: 8080}),
// the flag (`--server.port 8080`) and the environment variable (FOLIO_SERVER_PORT: upper case, dots
// to underscores). Precedence, highest first: flag > environment > YAML > default.
//
// Invalid configuration (an unknown YAML key, a value of the wrong type, a value out of range, a
// YAML syntax error) is an Error(InvalidInput) whose message names the key and where the value came
// from, so the CLI exits with code 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace folio {

struct ServerConfig {
  struct Model {
    std::string path;                  // "" = the shipped model (resolved_model_path)
    std::string weights;               // "" = as stored; else a --weights scheme (q8_0, q4_k_m, ...)
    std::string mmproj;                // with a .gguf model.path: llama.cpp's vision-tower file
    std::string encoder_precision = "auto";  // the vision encoder's products: auto | f32 | bf16
    std::string prefill_precision = "auto";  // the decoder's prefill products (Unlimited-OCR): auto | f32 | bf16
    bool mmap = false;                 // map the checkpoint instead of reading it into huge pages
    int64_t max_reference_length = 0;  // prompt tokens at most; 0 = the model's context
    std::string served_names;          // "a,b": names requests may use, the first reported; "" = the directory's name
  } model;
  struct Attention {
    std::string type = "reference_sliding_window";  // | full | sparse | rolling
    int64_t decode_window_size = 128;
    bool causal = true;
    int64_t sparse_top_k = 8;          // sparse: reference units each layer and KV head reads
    int64_t sparse_unit_tokens = 64;   // sparse: most tokens of one unit
    int64_t sparse_focus_pages = 1;    // sparse: pages read whole from the one being read
    int64_t sparse_neighbour_pages = -1;  // sparse: top-k only from pages this near the one being read (-1 = any)
    int64_t resident_pages = 4;        // rolling: pages kept in the reference at once
    double kv_keep = 1.0;              // rswa, sparse: fraction of each page's reference rows kept (as --kv-keep)
    int64_t kv_observe = 32;           // kv_keep < 1: prompt-tail tokens whose attention scores the rows
  } attention;
  struct Inference {
    int64_t max_output_length = 4096;  // generated tokens per request at most
    int64_t batch_size = 8;            // sequences decoded together at most
    std::string dtype = "auto";        // weights: auto (as stored) | f32 | f16 | bf16
    std::string kv_dtype = "bf16";     // f32 | f16 | bf16 | q8 | q4
    std::string kv_dtype_k, kv_dtype_v, kv_dtype_window;  // "" = as kv_dtype (keys, values; window after those)
    bool kv_rotate = false;            // K and V stored Walsh-Hadamard rotated per head (as --kv-rotate)
    uint64_t kv_budget_bytes = uint64_t{2} << 30;  // KV pool capacity; 0 = unlimited
    int64_t max_queued_requests = 64;  // waiting for admission; more get 503
    int64_t prefill_chunk = 256;       // prompt tokens prefilled per scheduler step
    bool batch_invariant = true;       // every request's tokens as alone (SchedulerOptions::batch_invariant)
    int64_t threads = 0;               // compute threads; 0 = one per core
    uint64_t reference_cache_bytes = uint64_t{256} << 20;  // prepared OCR references kept; 0 = no reuse
    uint64_t prefix_cache_bytes = uint64_t{256} << 20;     // reference KV kept for reuse; 0 = none
    // Tiered reference: complete reference segments leave the pool for RAM (kv_hot_bytes) then a
    // mapped file in kv_offload_dir (kv_cold_bytes); "" = the pool holds everything.
    std::string kv_offload_dir;
    uint64_t kv_hot_bytes = uint64_t{64} << 20, kv_cold_bytes = uint64_t{64} << 30;
  } inference;
  struct Remote {
    // Prepared OCR references shared by replicas (server/remote_reference_tier.h).
    std::string redis;         // "host:port" or redis://host:port; "" = no remote tier
    int64_t ttl_s = 86400;     // expiry of a value; 0 = none (Redis's maxmemory policy bounds the bytes)
    int64_t timeout_ms = 250;  // connect, send and receive, each
    double retry_s = 2;        // after a failure, no attempt for this long
    double claim_wait_s = 300; // a replica waits this long for a pass another replica is encoding; 0 = no claims
  } remote;
  struct Server {
    std::string host = "127.0.0.1";
    int64_t port = 8080;               // 0 = any free port
    std::string health_path = "/healthz";
    std::string api_keys_file;         // "" = no authentication
    double rate_limit = 0;             // requests per minute per API key (or client address); 0 = off
    double auth_failures_per_minute = 10;  // failed authentications per client address before 429; 0 = unlimited
    int64_t max_body_bytes = 16 << 20;
    double request_timeout_s = 600;
    // Connections (server/http_server.h): deadlines per phase, and caps.
    double idle_timeout_s = 60, header_timeout_s = 10, body_timeout_s = 300, write_timeout_s = 30;
    int64_t max_connections = 10000;
    int64_t max_connections_per_client = 0;  // 0 = no cap
    int64_t max_pages = 100;           // pages per OCR request at most
    std::string cors_origins;          // "" = no CORS; "*" or "https://a,https://b": origins browsers may call from
    std::string access_log = "-";      // one line per request: "-" = stderr, "off", or a file (appended)
    std::string log_format = "json";   // json | text
    std::string log_level = "info";    // info (every request) | warn (4xx and 5xx) | error (5xx) | off
    // TLS (HTTPS, OpenSSL): a PEM certificate (chain) and its private key, both or neither.
    std::string tls_cert_file, tls_key_file;
  } server;
};

// The items of a comma-separated setting ("a,b" -> {"a", "b"}; "" -> {}), kept as written (an
// empty item stays empty: settings that forbid it check for it).
std::vector<std::string> comma_list(const std::string& value);

// model.path, or the shipped model (runtime/default_model.h: $FOLIO_MODEL, next to the executable,
// the source tree) when it is not set; InvalidInput naming the places looked at if there is none.
std::string resolved_model_path(const ServerConfig& cfg);

struct ConfigSources {
  std::string yaml_path;                     // "" = no file
  std::map<std::string, std::string> env;    // environment variable name -> value
  std::map<std::string, std::string> flags;  // dotted key -> value
};

// Applies defaults, then the YAML file, then env, then flags. Throws Error(InvalidInput) naming the
// key (and file, variable or flag) for anything invalid; Error(Io) if the YAML file cannot be read.
ServerConfig load_server_config(const ConfigSources& sources);

// Every dotted key, in a stable order, and a one-line description of each (for --help).
const std::vector<std::string>& server_config_keys();
std::string server_config_help(const std::string& key);

// FOLIO_SERVER_PORT for server.port.
std::string config_env_var(const std::string& key);

// The FOLIO_* variables of the current process environment that name a config key.
std::map<std::string, std::string> config_environment();

}  // namespace folio
