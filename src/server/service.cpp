#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kv/block_pool.h"
#include "kv/file_tier.h"
#include "kv/kv_dtype.h"
#include "kv/ram_tier.h"
#include "runtime/default_model.h"
#include "runtime/loaded_model.h"
#include "runtime/ocr_model.h"
#include "runtime/scheduler.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/remote_reference_tier.h"
#include "server/remote_prefix.h"
#include "server/service_io.h"
#include "server/tokenize_request.h"

namespace folio {

using nlohmann::json;

namespace {

// The remote tier's settings (remote.*) for the model loaded from `path` (and model.mmproj).
RemoteReferenceTier::Options remote_options(const ServerConfig& cfg, const std::string& path) {
  RemoteReferenceTier::Options o;
  o.address = cfg.remote.redis;
  o.ttl_s = cfg.remote.ttl_s;
  o.timeout_ms = cfg.remote.timeout_ms;
  o.retry_s = cfg.remote.retry_s;
  o.claim_wait_s = cfg.remote.claim_wait_s;
  std::vector<std::string> files = {path};
  if (!cfg.model.mmproj.empty()) files.push_back(cfg.model.mmproj);
  // The weights decide the rows; the weights scheme (model.weights) does not touch the encoder,
  // but it is part of what was loaded, so replicas must agree on it too.
  o.fingerprint = model_fingerprint(files) + "/" + cfg.model.weights;
  return o;
}

}  // namespace

Service::Service(ServerConfig cfg)
    : cfg_(std::move(cfg)), limiter_(cfg_.server.rate_limit), auth_failures_(cfg_.server.auth_failures_per_minute), cache_(static_cast<size_t>(cfg_.inference.reference_cache_bytes)) {
  // KVPolicy::parse knows the names (and refuses others); the kind's rules check the numbers.
  policy_ = KVPolicy::parse(cfg_.attention.type, cfg_.attention.decode_window_size);
  policy_.top_k = cfg_.attention.sparse_top_k;
  policy_.unit_tokens = cfg_.attention.sparse_unit_tokens;
  policy_.focus_pages = cfg_.attention.sparse_focus_pages;
  policy_.neighbour_pages = cfg_.attention.sparse_neighbour_pages;
  policy_.resident_pages = cfg_.attention.resident_pages;
  policy_.keep = cfg_.attention.kv_keep;
  policy_.observe = cfg_.attention.kv_observe;
  policy_.rules().validate(policy_);
  if (!cfg_.attention.causal) throw Error(Error::Kind::Unsupported, "attention.causal: the decoder only runs causal attention (set true)");
  if (cfg_.inference.dtype != "auto")
    throw Error(Error::Kind::Unsupported, "inference.dtype: weights are used in the dtype the checkpoint stores them in; only 'auto' is supported, got '" +
                                              cfg_.inference.dtype + "'");
  kv_types_ = parse_kv_types(cfg_.inference.kv_dtype, cfg_.inference.kv_dtype_k, cfg_.inference.kv_dtype_v, cfg_.inference.kv_dtype_window);
  kv_types_.rotated = cfg_.inference.kv_rotate;
  if (!cfg_.server.api_keys_file.empty()) keys_ = ApiKeys::load(cfg_.server.api_keys_file);
  access_log_ = std::make_unique<AccessLog>(cfg_.server.access_log, cfg_.server.log_format, cfg_.server.log_level);
  std::string path = cfg_.model.path.empty() ? kDefaultOcrModel : cfg_.model.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  model_id_ = std::filesystem::path(path).filename().string();
  if (model_id_.empty()) model_id_ = "folio";
  served_names_ = comma_list(cfg_.model.served_names);
  if (served_names_.empty()) served_names_ = {model_id_};
  model_id_ = served_names_.front();
  mount_endpoints();
  HttpServer::Hooks hooks;
  hooks.handle = [this](HttpRequest& req, HttpResponse& res) { handle(req, res); };
  hooks.quick = [this](const HttpRequest& req) { return is_quick(req); };
  hooks.transport_error = [this](int status, const HttpRequest& req, HttpResponse& res) {
    current_access() = AccessRecord{};
    current_access().start = std::chrono::steady_clock::now();
    res.status = status;
    answer_http_error(req, res);
  };
  hooks.complete = [this](const HttpRequest& req, const HttpResponse& res) { log_request(req, res); };
  http_ = std::make_unique<HttpServer>(transport_options(), std::move(hooks));
}

Service::~Service() {
  shutdown();
  wait();
}

int Service::bind() {
  port_ = http_->bind();
  return port_;
}

void Service::start() {
  if (port_ <= 0) bind();
  // A client that goes away must not kill the process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  http_->start();
}

void Service::load() {
  const std::string path = resolved_model_path(cfg_);
  if (!std::filesystem::exists(path)) throw_invalid("model.path: " + path + " does not exist");
  if (is_ocr_model_dir(path) || !cfg_.model.mmproj.empty()) {
    ocr_model_ = load_ocr_model(path, cfg_.model.weights, cfg_.model.mmproj);
    ocr_model_->set_encoder_precision(kernels::gemm_precision_from_name(cfg_.model.encoder_precision, "model.encoder_precision"));
    if (!cfg_.remote.redis.empty()) remote_ = std::make_unique<RemoteReferenceTier>(remote_options(cfg_, path));
    decoder_ = &ocr_model_->decoder();
    tokenizer_ = &ocr_model_->tokenizer();
  } else {
    model_ = std::make_unique<LoadedModel>(load_model(path, true, cfg_.model.weights));
    decoder_ = model_->decoder.get();
    tokenizer_ = model_->tokenizer.get();
  }
  if (policy_.rolls() && (!ocr_model_ || !ocr_model_->can_roll()))
    throw Error(Error::Kind::Unsupported, "attention.type: rolling needs an OCR model that reads its pages separately; " +
                                              (ocr_model_ ? ocr_model_->name() : path) + " does not (use reference_sliding_window or sparse)");
  const ModelConfig& mc = decoder_->config();
  if (cfg_.model.max_reference_length >= mc.max_positions)
    throw_invalid("model.max_reference_length: " + std::to_string(cfg_.model.max_reference_length) + " leaves no room to generate in the model's context of " +
                  std::to_string(mc.max_positions) + " tokens");
  threads_ = std::make_unique<ThreadPool>(static_cast<int>(cfg_.inference.threads));
  // Pages are encoded on HTTP threads (one request at a time) with the calling thread alone: more
  // workers would compete, spinning, with the scheduler's for the same cores.
  encode_threads_ = std::make_unique<ThreadPool>(1);
  pool_ = std::make_unique<KVBlockPool>(decoder_->kv_layout(kv_types_), static_cast<size_t>(cfg_.inference.kv_budget_bytes));
  SchedulerOptions so;
  so.policy = policy_;
  so.max_batch = cfg_.inference.batch_size;
  so.prefill_chunk = cfg_.inference.prefill_chunk;
  so.batch_invariant = cfg_.inference.batch_invariant;
  so.max_queue = static_cast<size_t>(cfg_.inference.max_queued_requests);
  so.prefix_cache_bytes = static_cast<size_t>(cfg_.inference.prefix_cache_bytes);
  if (!cfg_.inference.kv_offload_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cfg_.inference.kv_offload_dir, ec);
    if (ec) throw Error(Error::Kind::Io, "inference.kv_offload_dir: cannot create " + cfg_.inference.kv_offload_dir + ": " + ec.message());
    reference_store_ = std::make_unique<TieredStore>(
        std::make_unique<RamTier>(static_cast<size_t>(cfg_.inference.kv_hot_bytes)),
        std::make_unique<FileTier>(cfg_.inference.kv_offload_dir, static_cast<size_t>(cfg_.inference.kv_cold_bytes)));
    so.reference_store = reference_store_.get();
  }
  if (remote_ && so.prefix_cache_bytes > 0) {
    // Whole references (with the logits their first token is sampled from) go to the other
    // replicas; serialised and written on the tier's writer thread, not the scheduler's.
    so.on_prefix_kept = [this](const PrefixKVCache::Entry& e) {
      if (e.logits.empty()) return;
      put_remote_prefix(*remote_, scheduler_->prefix_layout_id(), e);
    };
  }
  scheduler_ = std::make_unique<Scheduler>(*decoder_, *pool_, *threads_, so);
  loaded_ = true;
}

bool Service::ready() const {
  if (!loaded_ || draining_) return false;
  return scheduler_->stats().queued < cfg_.inference.max_queued_requests;
}

void Service::shutdown(std::chrono::milliseconds grace) {
  draining_ = true;
  const auto until = std::chrono::steady_clock::now() + grace;
  while (in_flight_ > 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Cancelling what is left ends every waiting handler; then the HTTP threads can finish.
  if (scheduler_) scheduler_->stop();
  if (http_) http_->stop();
}

void Service::wait() {
  if (http_) http_->wait();
}

Service::Handler Service::guarded(Handler h) {
  return [this, h](const HttpRequest& req, HttpResponse& res) {
    try {
      h(req, res);
    } catch (const ApiError& e) {
      metrics_.count_rejection(e.code);
      if (e.status == 503 && !res.has_header("Retry-After")) res.set_header("Retry-After", "1");
      send_error(res, e);
    } catch (const Error& e) {
      const Error::Mapping& m = e.mapping();
      ApiError a(m.http_status, m.type, m.code, e.what());
      if (a.status == 503) a.retry_after_s = 1;
      metrics_.count_rejection(a.code);
      send_error(res, a);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, "server_error", "internal_error", e.what()));
    }
  };
}

void Service::add_route(const std::string& method, const std::string& path, Handler handler) {
  if (path.rfind("/v1/", 0) != 0) throw_invalid("add_route: '" + path + "' is not under /v1/");
  if (method != "GET" && method != "POST") throw_invalid("add_route: method must be GET or POST, got '" + method + "'");
  mount(method, path, guarded(std::move(handler)));
}

void Service::mount(const std::string& method, const std::string& path, Handler handler) { router_.add(method, path, std::move(handler)); }


HttpServerOptions Service::transport_options() const {
  const ServerConfig::Server& sc = cfg_.server;
  HttpServerOptions o;
  o.host = sc.host;
  o.port = static_cast<int>(sc.port);
  o.tls_cert_file = sc.tls_cert_file;
  o.tls_key_file = sc.tls_key_file;
  o.max_body_bytes = static_cast<size_t>(sc.max_body_bytes);
  o.idle_timeout_s = sc.idle_timeout_s;
  o.header_timeout_s = sc.header_timeout_s;
  o.body_timeout_s = sc.body_timeout_s;
  o.write_timeout_s = sc.write_timeout_s;
  o.max_connections = static_cast<size_t>(sc.max_connections);
  o.max_connections_per_client = static_cast<size_t>(sc.max_connections_per_client);
  // A worker for every running and queued request plus a few, so a request that cannot be queued
  // is answered 503 at once instead of waiting for a worker. Slow or idle connections hold none.
  o.worker_threads = static_cast<size_t>(cfg_.inference.batch_size + cfg_.inference.max_queued_requests + 8);
  return o;
}

bool Service::is_quick(const HttpRequest& req) const {
  return req.method == "GET" && (req.path == cfg_.server.health_path || req.path == "/readyz" || req.path == "/metrics");
}

void Service::handle(HttpRequest& req, HttpResponse& res) {
  route(req, res);
  if (res.status < 0) res.status = 200;
}

void Service::route(HttpRequest& req, HttpResponse& res) {
  if (gate(req, res)) return;
  const HttpRouter::Found found = router_.find(req.method, req.path, req.matches);
  if (!found.handler) {
    res.status = found.status;
    return answer_http_error(req, res);
  }
  try {
    (*found.handler)(req, res);
  } catch (const std::exception& e) {
    res = HttpResponse{};
    send_error(res, ApiError(500, "server_error", "internal_error", e.what()));
  }
}

// The gate in front of every API route: key, draining, rate limit. Runs before the body is read.
bool Service::gate(const HttpRequest& req, HttpResponse& res) {
  current_access() = AccessRecord{};
  current_access().start = std::chrono::steady_clock::now();
  if (cors_headers(req, res) && req.method == "OPTIONS") {
    // A CORS preflight: answered before the key check (browsers send it without credentials).
    res.status = 204;
    return true;
  }
  // The API: /v1/ and llama-server's /tokenize and /detokenize (probes and /metrics stay open).
  const bool api = req.path.rfind("/v1/", 0) == 0 || req.path == "/tokenize" || req.path == "/detokenize";
  if (!api) return false;
  // Every answer of the API, errors included, carries the request's id (the client's, or ours).
  current_access().request_id = ids_.for_request(req.get_header_value("X-Request-Id"));
  current_access().model = model_id_;
  res.set_header("X-Request-Id", current_access().request_id);
  try {
    std::string client = "addr:" + req.remote_addr;
    if (keys_.enabled()) {
      const std::string key = bearer_token(req.get_header_value("Authorization"));
      if (key.empty() || !keys_.accepts(key)) {
        // Each failure takes a token of the address's bucket: guessing keys gets 429 quickly,
        // while a client with a valid key is never held back by it.
        if (int64_t wait = auth_failures_.acquire(client)) {  // still the address
          res.set_header("Retry-After", std::to_string(wait));
          throw ApiError(429, "rate_limit_error", "too_many_failed_authentications",
                         "too many failed authentications from this address (server.auth_failures_per_minute); retry in " +
                             std::to_string(wait) + " s");
        }
        if (key.empty())
          throw ApiError(401, "authentication_error", "missing_api_key", "no API key: send the header 'Authorization: Bearer <key>'");
        throw ApiError(401, "authentication_error", "invalid_api_key", "the API key is not valid");
      }
      client = "key:" + key;
      current_access().key_id = AccessLog::key_id(key);
    }
    if (draining_) throw ApiError(503, "server_error", "shutting_down", "the server is shutting down");
    if (int64_t wait = limiter_.acquire(client)) {
      res.set_header("Retry-After", std::to_string(wait));
      throw ApiError(429, "rate_limit_error", "rate_limit_exceeded",
                     "rate limit of " + shortest_number(cfg_.server.rate_limit) + " requests per minute exceeded; retry in " +
                         std::to_string(wait) + " s");
    }
  } catch (const ApiError& e) {
    metrics_.count_rejection(e.code);
    if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, e);
    return true;
  }
  return false;
}

// Errors found before a handler (transport: malformed request, body too large; router: no such
// path or method), in JSON like every other error.
void Service::answer_http_error(const HttpRequest& req, HttpResponse& res) {
  if (res.status == 413) {
    metrics_.count_rejection("body_too_large");
    send_error(res, ApiError(413, "invalid_request_error", "body_too_large",
                             "the request body exceeds server.max_body_bytes (" + std::to_string(cfg_.server.max_body_bytes) + " bytes)"));
  } else if (res.status == 405) {
    const std::string allow = router_.allowed(req.path);
    res.set_header("Allow", allow);
    send_error(res, ApiError(405, "invalid_request_error", "method_not_allowed",
                             req.method + " is not allowed on " + req.path + ": use " + allow));
  } else if (res.status == 404) {
    send_error(res, ApiError(404, "invalid_request_error", "not_found", "no such endpoint: " + req.method + " " + req.path));
  } else if (res.status == 431) {
    send_error(res, ApiError(431, "invalid_request_error", "headers_too_large", "the request's headers exceed 64 KiB"));
  } else if (res.status == 400) {
    send_error(res, ApiError(400, "invalid_request_error", "malformed_request", "the request is not valid HTTP/1.1"));
  } else {
    send_error(res, ApiError(res.status, "server_error", "http_error", "HTTP error " + std::to_string(res.status)));
  }
}

void Service::log_request(const HttpRequest& req, const HttpResponse& res) {
  // Known paths only, so a scan of random URLs cannot grow the label set.
  static const char* known[] = {"/v1/chat/completions", "/v1/completions", "/v1/ocr", "/v1/models", "/readyz", "/metrics"};
  std::string label = "other";
  for (const char* k : known)
    if (req.path == k) label = k;
  if (req.path == cfg_.server.health_path) label = req.path;
  if (req.path.rfind("/v1/models/", 0) == 0) label = "/v1/models/{id}";
  metrics_.count_request(label, res.status);
  current_access().method = req.method;
  current_access().path = req.path;
  current_access().status = res.status;
  access_log_->write(current_access());
  current_access() = AccessRecord{};
}

void Service::mount_endpoints() {
  mount("GET", cfg_.server.health_path, [](const HttpRequest&, HttpResponse& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  mount("GET", "/readyz", [this](const HttpRequest&, HttpResponse& res) {
    std::string why;
    if (!loaded_) why = "the model is loading";
    else if (draining_) why = "the server is shutting down";
    else if (scheduler_->stats().queued >= cfg_.inference.max_queued_requests) why = "the wait queue is full";
    if (why.empty()) {
      res.set_content(R"({"status":"ready"})", "application/json");
    } else {
      res.status = 503;
      res.set_content(dump(json{{"status", "not ready"}, {"reason", why}}), "application/json");
    }
  });
  mount("GET", "/metrics", [this](const HttpRequest&, HttpResponse& res) {
    std::optional<SchedulerStats> s;
    if (loaded_) s = scheduler_->stats();
    const ReferenceCacheStats cache = cache_.stats();
    const ConnectionStats conns{http_->open_connections(), http_->refused_connections()};
    std::optional<RemoteTierStats> remote;
    if (remote_) remote = remote_->stats();
    res.set_content(metrics_.render(s ? &*s : nullptr, ready(), &cache, &conns, remote ? &*remote : nullptr), "text/plain; version=0.0.4");
  });
  auto model_object = [](const std::string& name) { return json{{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "folio"}}; };
  mount("GET", "/v1/models", guarded([this, model_object](const HttpRequest&, HttpResponse& res) {
    json data = json::array();
    for (const std::string& name : served_names_) data.push_back(model_object(name));
    res.set_content(dump(json{{"object", "list"}, {"data", data}}), "application/json");
  }));
  // One model by name (the SDKs' models.retrieve); any of the served names.
  mount("GET", R"(/v1/models/([^/]+))", guarded([this, model_object](const HttpRequest& req, HttpResponse& res) {
    const std::string name = req.matches[1];
    check_model(name);
    res.set_content(dump(model_object(name)), "application/json");
  }));
  mount("POST", "/v1/chat/completions", guarded([this](const HttpRequest& req, HttpResponse& res) { chat_completions(req, res); }));
  mount("POST", "/v1/completions", guarded([this](const HttpRequest& req, HttpResponse& res) { completions(req, res); }));
  mount("POST", "/v1/ocr", guarded([this](const HttpRequest& req, HttpResponse& res) { ocr(req, res); }));
  mount("POST", "/tokenize", guarded([this](const HttpRequest& req, HttpResponse& res) { tokenize(req, res); }));
  mount("POST", "/detokenize", guarded([this](const HttpRequest& req, HttpResponse& res) { detokenize(req, res); }));
}

void Service::tokenize(const HttpRequest& req, HttpResponse& res) {
  check_loaded(res);
  const TokenizeRequest tr = parse_tokenize_request(req.body);
  std::vector<int32_t> ids;
  if (tr.add_special && decoder_->config().bos_id >= 0) ids.push_back(decoder_->config().bos_id);
  const std::vector<int32_t> text = tokenizer_->encode(tr.content);
  ids.insert(ids.end(), text.begin(), text.end());
  json tokens = json::array();
  for (int32_t id : ids) {
    if (tr.with_pieces) tokens.push_back({{"id", id}, {"piece", tokenizer_->token_bytes(id)}});
    else tokens.push_back(id);
  }
  res.set_content(dump(json{{"tokens", tokens}}), "application/json");
}

void Service::detokenize(const HttpRequest& req, HttpResponse& res) {
  check_loaded(res);
  const DetokenizeRequest dr = parse_detokenize_request(req.body);
  const int32_t vocab = tokenizer_->vocab_size();
  for (int32_t id : dr.tokens)
    if (id < 0 || id >= vocab)
      throw bad_request("invalid_value", "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  res.set_content(dump(json{{"content", tokenizer_->decode(dr.tokens)}}), "application/json");
}

bool Service::cors_headers(const HttpRequest& req, HttpResponse& res) const {
  const std::string origin = req.get_header_value("Origin");
  const std::string& allowed = cfg_.server.cors_origins;
  if (allowed.empty() || origin.empty()) return false;
  const std::vector<std::string> origins = comma_list(allowed);
  if (allowed != "*" && std::find(origins.begin(), origins.end(), origin) == origins.end()) return false;
  res.set_header("Access-Control-Allow-Origin", allowed == "*" ? "*" : origin);
  res.set_header("Vary", "Origin");
  if (req.method == "OPTIONS") {
    const std::string methods = router_.allowed(req.path);
    res.set_header("Access-Control-Allow-Methods", methods.empty() ? "GET, POST" : methods);
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id");
    res.set_header("Access-Control-Max-Age", "600");
  }
  res.set_header("Access-Control-Expose-Headers", "X-Request-Id, Retry-After");
  return true;
}

void Service::check_loaded(HttpResponse& res) const {
  if (!loaded_) {
    res.set_header("Retry-After", "1");
    throw ApiError(503, "server_error", "model_loading", "the model is still loading");
  }
}

void Service::check_model(const std::string& model) const {
  if (model.empty() || std::find(served_names_.begin(), served_names_.end(), model) != served_names_.end()) return;
  std::string names;
  for (const std::string& n : served_names_) names += (names.empty() ? "'" : ", '") + n + "'";
  throw ApiError(404, "invalid_request_error", "model_not_found", "model '" + model + "' does not exist; this server serves " + names);
}

}  // namespace folio
