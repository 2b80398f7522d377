#include "server/service.h"

#include "server/remote_prefix.h"
#include "server/stop_strings.h"
#include "server/tokenize_request.h"
#include "kv/file_tier.h"
#include "kv/kv_dtype.h"
#include "kv/ram_tier.h"

#include "server/completion_request.h"
#include "server/token_logprobs.h"
#include "server/multipart.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "runtime/default_model.h"
#include "server/api_error.h"
#include "server/chat_request.h"

namespace folio {

namespace {

using nlohmann::json;

// Generated text can hold invalid UTF-8 (a model may emit any byte tokens); JSON cannot, so such
// bytes become U+FFFD instead of failing the response.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  res.set_content(dump(e.body()), "application/json");
}

// OpenAI's finish_reason for a scheduler stop reason (stop_string: a `stop` string was found).
std::string finish_reason(StopReason stop) { return stop == StopReason::Eos || stop == StopReason::StopString ? "stop" : "length"; }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(const SequenceResult& r) {
  const int64_t completion = static_cast<int64_t>(r.tokens.size());
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_prompt_tokens}}}};
}

// The access record of the request this thread is answering: the transport runs a request's
// handler, content provider and completion hook on one thread, one request at a time
// (http_server.h).
// Reset when the request's headers are read and after its line is written.
thread_local AccessRecord t_access;

void note_result(const SequenceResult& r) {
  t_access.prompt_tokens = r.prompt_tokens;
  t_access.cached_tokens = r.cached_prompt_tokens;
  t_access.completion_tokens = static_cast<int64_t>(r.tokens.size());
  t_access.queue_ms = r.queue_ms;
  t_access.ttft_ms = r.ttft_ms;
  t_access.finish = r.stop_reason.name();
}

// A stream whose client went away: noted, and false for the content provider to return.
bool client_closed() {
  t_access.finish = "client_closed";
  return false;
}

void note_job(const OcrJob& job) {
  const json u = job.usage();
  t_access.prompt_tokens = u["prompt_tokens"].get<int64_t>();
  t_access.cached_tokens = u["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  t_access.completion_tokens = u["completion_tokens"].get<int64_t>();
  const std::optional<ApiError> e = job.failure();
  t_access.finish = e ? e->code : "stop";
}

// Tokens and the final result of one request, handed from the scheduler thread to the HTTP thread.
// Counts a request as in flight until it is destroyed (or released to another owner).
struct InFlight {
  std::atomic<int64_t>* n;
  explicit InFlight(std::atomic<int64_t>& c) : n(&c) { ++*n; }
  ~InFlight() {
    if (n) --*n;
  }
  void release() { n = nullptr; }
};

}  // namespace

// A text generation's tokens and result, from the scheduler thread to the HTTP thread answering it.
struct ChatChannel {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;  // one per token when the request asked for logprobs
  size_t taken = 0;
  std::optional<SequenceResult> result;
};

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
    t_access = AccessRecord{};
    t_access.start = std::chrono::steady_clock::now();
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
    if (!cfg_.remote.redis.empty()) remote_ = std::make_unique<RemoteReferenceTier>(remote_options(path));
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

RemoteReferenceTier::Options Service::remote_options(const std::string& path) const {
  RemoteReferenceTier::Options o;
  o.address = cfg_.remote.redis;
  o.ttl_s = cfg_.remote.ttl_s;
  o.timeout_ms = cfg_.remote.timeout_ms;
  o.retry_s = cfg_.remote.retry_s;
  o.claim_wait_s = cfg_.remote.claim_wait_s;
  std::vector<std::string> files = {path};
  if (!cfg_.model.mmproj.empty()) files.push_back(cfg_.model.mmproj);
  // The weights decide the rows; the weights scheme (model.weights) does not touch the encoder,
  // but it is part of what was loaded, so replicas must agree on it too.
  o.fingerprint = model_fingerprint(files) + "/" + cfg_.model.weights;
  return o;
}

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
  t_access = AccessRecord{};
  t_access.start = std::chrono::steady_clock::now();
  if (cors_headers(req, res) && req.method == "OPTIONS") {
    // A CORS preflight: answered before the key check (browsers send it without credentials).
    res.status = 204;
    return true;
  }
  // The API: /v1/ and llama-server's /tokenize and /detokenize (probes and /metrics stay open).
  const bool api = req.path.rfind("/v1/", 0) == 0 || req.path == "/tokenize" || req.path == "/detokenize";
  if (!api) return false;
  // Every answer of the API, errors included, carries the request's id (the client's, or ours).
  t_access.request_id = ids_.for_request(req.get_header_value("X-Request-Id"));
  t_access.model = model_id_;
  res.set_header("X-Request-Id", t_access.request_id);
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
      t_access.key_id = AccessLog::key_id(key);
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
  t_access.method = req.method;
  t_access.path = req.path;
  t_access.status = res.status;
  access_log_->write(t_access);
  t_access = AccessRecord{};
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

std::unique_ptr<OcrJob> Service::start_ocr_job(std::vector<UploadedFile> files, const std::string& pages, std::optional<int64_t> max_tokens) {
  if (!ocr_model_)
    throw bad_request("unsupported_content", "model '" + model_id_ + "' is a text model: it does not read documents or images");
  OcrEngine e;
  e.model = ocr_model_.get();
  e.scheduler = scheduler_.get();
  e.cache = &cache_;
  e.remote = remote_.get();
  e.encode_threads = encode_threads_.get();
  e.encode_mu = &encode_mu_;
  e.on_pass_done = [this](const SequenceResult& r) { metrics_.record_generation(r); };
  e.model_id = model_id_;
  OcrJobLimits lim;
  lim.max_pages = static_cast<size_t>(cfg_.server.max_pages);
  lim.max_output_length = cfg_.inference.max_output_length;
  lim.max_reference_length = cfg_.model.max_reference_length;
  lim.timeout_s = cfg_.server.request_timeout_s;
  return OcrJob::start(e, std::move(files), pages, max_tokens, lim);
}

namespace {

void send_sse(DataSink& sink, bool& ok, const json& j) {
  if (!ok) return;
  const std::string s = "data: " + dump(j) + "\n\n";
  ok = sink.write(s.data(), s.size());
}

bool end_sse(DataSink& sink, bool ok) {
  if (!ok) return false;
  const std::string done = "data: [DONE]\n\n";
  if (!sink.write(done.data(), done.size())) return false;
  sink.done();
  return true;
}

// An OcrJob answered as SSE: owned by the response, cancelled if the client goes away.
struct JobStream {
  std::unique_ptr<OcrJob> job;
  bool finished = false;
  bool opened = false;  // the pump's opening event was sent
};

// Waits for a job answered whole; false (the job cancelled and counted) when its client went away
// first: polled every 100 ms, so the job's passes stop within a decode step of that.
bool wait_for_job(OcrJob& job, const HttpRequest& req, ServerMetrics& metrics) {
  while (!job.poll(std::chrono::milliseconds(100)).done) {
    if (!req.client_gone()) continue;
    job.cancel();
    metrics.count_cancelled_by_client();
    note_job(job);
    t_access.finish = "client_closed";
    return false;
  }
  return true;
}

// The release hook of a streamed job's response: a client that left before the end cancels the
// job (counted), and the request stops counting as in flight.
std::function<void(bool)> job_released(std::shared_ptr<JobStream> st, ServerMetrics& metrics, std::atomic<int64_t>& in_flight) {
  return [st = std::move(st), &metrics, &in_flight](bool) {
    if (!st->finished) {
      st->job->cancel();
      metrics.count_cancelled_by_client();
    }
    --in_flight;
  };
}

// The SSE pump of a streamed job, for /v1/ocr and for documents sent to /v1/chat/completions:
// `opening` once (when given), one event per page as it becomes final, then the job's error or
// its `closing` event, then [DONE]. It wakes every 100 ms to notice a client that left.
using PageEvent = std::function<json(OcrJob&, size_t page)>;
using ClosingEvent = std::function<json(OcrJob&)>;
auto job_pump(std::shared_ptr<JobStream> st, std::optional<json> opening, PageEvent page, ClosingEvent closing) {
  return [st = std::move(st), opening = std::move(opening), page = std::move(page), closing = std::move(closing)](
             size_t, DataSink& sink) {
    OcrJob& job = *st->job;
    bool ok = true;
    if (opening && !st->opened) {
      st->opened = true;
      send_sse(sink, ok, *opening);
    }
    const OcrJob::Progress p = job.poll(std::chrono::milliseconds(100));
    // A client that left mid-page is seen here, not only at the next page's write.
    if (!sink.is_writable()) return client_closed();
    for (size_t i : p.pages) send_sse(sink, ok, page(job, i));
    if (!ok) return client_closed();
    if (!p.done) return true;
    st->finished = true;
    note_job(job);
    if (auto e = job.failure()) send_sse(sink, ok, e->body());
    else send_sse(sink, ok, closing(job));
    return end_sse(sink, ok);
  };
}

}  // namespace

void Service::check_model(const std::string& model) const {
  if (model.empty() || std::find(served_names_.begin(), served_names_.end(), model) != served_names_.end()) return;
  std::string names;
  for (const std::string& n : served_names_) names += (names.empty() ? "'" : ", '") + n + "'";
  throw ApiError(404, "invalid_request_error", "model_not_found", "model '" + model + "' does not exist; this server serves " + names);
}

void Service::ocr(const HttpRequest& req, HttpResponse& res) {
  InFlight counted(in_flight_);
  check_loaded(res);
  OcrRequest orq;
  if (req.is_multipart_form_data()) {
    orq = parse_ocr_form(parse_multipart_form(req.get_header_value("Content-Type"), req.body));
  } else {
    orq = parse_ocr_json(req.body);
  }
  check_model(orq.model);
  auto st = std::make_shared<JobStream>();
  st->job = start_ocr_job(std::move(orq.files), orq.pages, orq.max_tokens);
  const std::string id = ids_.next("ocr");
  const int64_t created = unix_now();

  if (!orq.stream) {
    if (!wait_for_job(*st->job, req, metrics_)) return;
    note_job(*st->job);
    if (auto e = st->job->failure()) throw *e;
    json body = st->job->result();
    body["id"] = id;
    body["created"] = created;
    res.set_content(dump(body), "application/json");
    return;
  }
  // Streaming: one event per page as it becomes final ({"object": "ocr.page", "index", "page"}),
  // then the whole result ({"object": "ocr", ...}), then [DONE].
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      job_pump(
          st, std::nullopt,
          [id](OcrJob& job, size_t i) { return json{{"id", id}, {"object", "ocr.page"}, {"index", i}, {"page", job.page_json(i)}}; },
          [id, created](OcrJob& job) {
            json body = job.result();
            body["id"] = id;
            body["created"] = created;
            return body;
          }),
      job_released(st, metrics_, in_flight_));
  counted.release();
}

namespace {

// One chunk of a streamed chat completion (OpenAI's chat.completion.chunk).
json chat_chunk(const std::string& id, int64_t created, const std::string& model, json delta, json finish) {
  json c = {{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}};
  return json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model}, {"choices", json::array({c})}};
}

// One chunk of a streamed text completion (/v1/completions).
json text_chunk(const std::string& id, int64_t created, const std::string& model, const std::string& text, json finish) {
  json c = {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", std::move(finish)}};
  return json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}, {"choices", json::array({c})}};
}

json text_completion(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                     const std::string& finish, json usage, const std::vector<int32_t>* token_ids) {
  json body = text_chunk(id, created, model, text, finish);
  if (token_ids) body["choices"][0]["token_ids"] = *token_ids;
  body["usage"] = std::move(usage);
  return body;
}

json chat_completion(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                     const std::string& finish, json usage, const std::vector<int32_t>* token_ids) {
  json choice = {{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", finish}};
  if (token_ids) choice["token_ids"] = *token_ids;
  return {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model}, {"choices", json::array({choice})},
          {"usage", std::move(usage)}};
}

}  // namespace

void Service::chat_completions(const HttpRequest& req, HttpResponse& res) {
  InFlight counted(in_flight_);
  check_loaded(res);
  ChatRequest cr = parse_chat_request(req.body);
  check_model(cr.model);
  const AnswerIds ids{ids_.next("chatcmpl"), unix_now(), false, ""};
  if (!cr.images.empty()) {
    if (!cr.stop.empty()) throw bad_request("unsupported_parameter", "'stop' does not apply to documents and images");
    if (cr.top_logprobs >= 0) throw bad_request("unsupported_parameter", "'logprobs' does not apply to documents and images");
    if (cr.n > 1) throw bad_request("unsupported_parameter", "'n' > 1 does not apply to documents and images: a document has one reading");
    if (!chat_documents(req, cr, ids, res)) return;
  } else {
    std::vector<Choice> choices = submit_choices(cr, [&](std::shared_ptr<ChatChannel> ch) { return chat_sequence(cr, std::move(ch)); });
    if (!cr.stream) return chat_whole(req, cr, ids, choices, res);
    chat_stream(cr, ids, std::move(choices), res);
  }
  counted.release();  // the stream's releaser ends this request's flight
}

void Service::completions(const HttpRequest& req, HttpResponse& res) {
  InFlight counted(in_flight_);
  check_loaded(res);
  CompletionRequest q = parse_completion_request(req.body);
  check_model(q.gen.model);
  std::vector<int32_t> prompt = std::move(q.prompt_tokens);
  if (prompt.empty()) {
    if (decoder_->config().bos_id >= 0) prompt.push_back(decoder_->config().bos_id);
    const std::vector<int32_t> ids = tokenizer_->encode(q.prompt);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  const int32_t vocab = tokenizer_->vocab_size();
  for (int32_t id : prompt)
    if (id >= vocab) throw bad_request("invalid_value", "'prompt' holds token id " + std::to_string(id) + ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  AnswerIds ids{ids_.next("cmpl"), unix_now(), true, ""};
  if (q.echo && !q.prompt.empty()) ids.echo = q.prompt;
  if (q.echo && q.prompt.empty()) {
    std::vector<int32_t> text_ids;
    for (int32_t t : prompt)
      if (is_text(t)) text_ids.push_back(t);
    ids.echo = tokenizer_->decode(text_ids);
  }
  std::vector<Choice> choices = submit_choices(q.gen, [&](std::shared_ptr<ChatChannel> ch) { return text_sequence(prompt, q.gen, std::move(ch)); });
  if (!q.gen.stream) return chat_whole(req, q.gen, ids, choices, res);
  chat_stream(q.gen, ids, std::move(choices), res);
  counted.release();  // the stream's releaser ends this request's flight
}

// An OCR model reads the images as the pages of one document; the text parts are not used (the
// shipped model takes no prompt). False when answered whole; true when streamed.
bool Service::chat_documents(const HttpRequest& req, ChatRequest& cr, const AnswerIds& ids, HttpResponse& res) {
  auto st = std::make_shared<JobStream>();
  st->job = start_ocr_job(std::move(cr.images), "", cr.max_tokens);
  if (!cr.stream) {
    if (!wait_for_job(*st->job, req, metrics_)) return true;
    note_job(*st->job);
    if (auto e = st->job->failure()) throw *e;
    const std::vector<int32_t> tokens = cr.return_token_ids ? st->job->tokens() : std::vector<int32_t>();
    res.set_content(dump(chat_completion(ids.id, ids.created, model_id_, st->job->markdown(), "stop", st->job->usage(),
                                         cr.return_token_ids ? &tokens : nullptr)),
                    "application/json");
    return false;
  }
  const std::string model_id = model_id_;
  auto chunk = [ids, model_id](json delta, json finish) { return chat_chunk(ids.id, ids.created, model_id, std::move(delta), std::move(finish)); };
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      job_pump(
          st, chunk({{"role", "assistant"}, {"content", ""}}, nullptr),
          [chunk](OcrJob& job, size_t i) { return chunk({{"content", job.markdown_piece(i)}}, nullptr); },
          [chunk](OcrJob& job) {
            json last = chunk(json::object(), "stop");
            last["usage"] = job.usage();
            return last;
          }),
      job_released(st, metrics_, in_flight_));
  return true;
}

// The prompt (BOS and the chat template's text) within the server's limits, as a request whose
// tokens and result go to `ch`.
SequenceRequest Service::chat_sequence(const ChatRequest& cr, std::shared_ptr<ChatChannel> ch) {
  std::vector<int32_t> prompt;
  if (decoder_->config().bos_id >= 0) prompt.push_back(decoder_->config().bos_id);
  const std::vector<int32_t> ids = tokenizer_->encode(chat_prompt_text(cr.messages));
  prompt.insert(prompt.end(), ids.begin(), ids.end());
  return text_sequence(std::move(prompt), cr, std::move(ch));
}

SequenceRequest Service::text_sequence(std::vector<int32_t> prompt, const ChatRequest& cr, std::shared_ptr<ChatChannel> ch) {
  const ModelConfig& mc = decoder_->config();
  const int64_t P = static_cast<int64_t>(prompt.size());
  const int64_t max_ref = cfg_.model.max_reference_length > 0 ? cfg_.model.max_reference_length : mc.max_positions - 1;
  if (P > max_ref)
    throw bad_request("context_length_exceeded", "the prompt has " + std::to_string(P) + " tokens; this server takes at most " +
                                                     std::to_string(max_ref) + " (model.max_reference_length / the model's context)");
  const int64_t limit = std::min<int64_t>(cfg_.inference.max_output_length, mc.max_positions - P);
  if (cr.max_tokens && *cr.max_tokens > limit)
    throw bad_request("invalid_value", "'max_tokens' is " + std::to_string(*cr.max_tokens) + " but at most " + std::to_string(limit) +
                                           " can be generated (inference.max_output_length, and the model's context after " +
                                           std::to_string(P) + " prompt tokens)");
  SequenceRequest sr;
  sr.prompt = std::move(prompt);
  sr.max_tokens = cr.max_tokens.value_or(limit);
  sr.sampling = {cr.temperature, 0, cr.top_p, cr.seed};
  sr.stop_at_eos = !cr.ignore_eos;
  sr.deadline = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(cfg_.server.request_timeout_s));
  std::shared_ptr<LogprobRecorder> rec;
  if (cr.top_logprobs >= 0) {
    rec = std::make_shared<LogprobRecorder>(cr.top_logprobs);
    sr.on_logits = [rec](std::span<const float> row) { rec->logits(row); };
  }
  sr.on_token = [ch, rec](int32_t t) {
    std::lock_guard lk(ch->mu);
    ch->tokens.push_back(t);
    if (rec) ch->logprobs.push_back(rec->take(t));
    ch->cv.notify_all();
  };
  sr.on_done = [this, ch](const SequenceResult& r) {
    metrics_.record_generation(r);
    std::lock_guard lk(ch->mu);
    ch->result = r;
    ch->cv.notify_all();
  };
  return sr;
}

RequestId Service::submit_chat(SequenceRequest sr) {
  const Submission sub = scheduler_->submit(std::move(sr));
  if (auto e = rejection_error(sub)) throw *e;
  return sub.id;
}

bool Service::is_text(int32_t token) const {
  return token != decoder_->config().eos_id && !tokenizer_->is_control(token);
}

json Service::logprobs_json(std::span<const TokenLogprob> ts, const AnswerIds& ids, size_t offset) const {
  std::vector<TokenLogprob> text;  // EOS and control tokens are not in the text, so not here either
  for (const TokenLogprob& t : ts)
    if (is_text(t.token)) text.push_back(t);
  if (ids.text_completion) return completion_logprobs_json(text, *tokenizer_, offset);
  json content = json::array();
  for (const TokenLogprob& t : text) content.push_back(chat_logprob_json(t, *tokenizer_));
  return json{{"content", content}};
}

std::vector<Service::Choice> Service::submit_choices(const ChatRequest& cr,
                                                     const std::function<SequenceRequest(std::shared_ptr<ChatChannel>)>& make) {
  std::vector<Choice> out;
  for (int i = 0; i < cr.n; ++i) {
    auto ch = std::make_shared<ChatChannel>();
    SequenceRequest sr = make(ch);
    sr.sampling.seed += static_cast<uint64_t>(i);  // sampled choices differ; greedy ones are equal
    try {
      out.push_back({ch, submit_chat(std::move(sr))});
    } catch (...) {
      for (const Choice& c : out) scheduler_->cancel(c.rid);
      throw;
    }
  }
  return out;
}

// One choice, not streamed: waits for its result. With stop strings the text is matched as it
// comes, and the sequence cancelled at the first.
std::optional<Service::ChoiceText> Service::collect_choice(const HttpRequest& req, const ChatRequest& cr, const Choice& c) {
  ChatChannel& ch = *c.ch;
  SequenceResult r;
  StopStrings stops(cr.stop);
  StreamingDetokenizer detok(*tokenizer_);
  std::string stopped_text;
  {
    // Without stop strings only the result wakes this thread, not every token.
    const bool match = !stops.empty();
    std::unique_lock lk(ch.mu);
    bool cancelled = false;
    while (true) {
      // Wakes every 100 ms to look at the connection: a client that left cancels its sequence,
      // whose KV is freed at the scheduler's next step.
      ch.cv.wait_for(lk, std::chrono::milliseconds(100),
                     [&] { return (match && !stops.stopped() && ch.tokens.size() > ch.taken) || ch.result.has_value(); });
      if (!cancelled && !ch.result && req.client_gone()) {
        cancelled = true;
        lk.unlock();
        scheduler_->cancel(c.rid);
        metrics_.count_cancelled_by_client();
        lk.lock();
      }
      for (; match && !stops.stopped() && ch.taken < ch.tokens.size(); ++ch.taken)
        if (is_text(ch.tokens[ch.taken])) stopped_text += stops.push(detok.push(ch.tokens[ch.taken]));
      if (ch.result) break;
      if (stops.stopped()) {  // once: the wait above now waits for the cancelled result only
        lk.unlock();
        scheduler_->cancel(c.rid);
        lk.lock();
      }
    }
    r = *ch.result;
    if (cancelled) {
      note_result(r);
      t_access.finish = "client_closed";
      return std::nullopt;  // nobody to answer
    }
  }
  std::string text;
  if (stops.empty()) {
    // EOS and other control tokens are not text (the streaming path skips them the same way).
    std::vector<int32_t> text_ids;
    for (int32_t t : r.tokens)
      if (is_text(t)) text_ids.push_back(t);
    text = tokenizer_->decode(text_ids);
  } else {
    text = stopped_text;
    if (!stops.stopped()) text += stops.push(detok.flush());
    text += stops.finish();
  }
  if (stops.stopped()) r.stop_reason = StopReason::StopString;  // the sequence was cancelled for it: not an error
  return ChoiceText{std::move(r), std::move(text)};
}

namespace {

// Usage of an answer of several choices: the prompt once, every choice's tokens.
json choices_usage(const SequenceResult& first, int64_t completion) {
  return {{"prompt_tokens", first.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", first.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", first.cached_prompt_tokens}}}};
}

}  // namespace

// Not streamed: every choice in order (they are generated side by side in the running batch).
void Service::chat_whole(const HttpRequest& req, const ChatRequest& cr, const AnswerIds& ids, const std::vector<Choice>& choices,
                         HttpResponse& res) {
  const auto answer = ids.text_completion ? text_completion : chat_completion;
  auto cancel_from = [&](size_t k) {
    for (; k < choices.size(); ++k) scheduler_->cancel(choices[k].rid);
  };
  json body, list = json::array();
  SequenceResult first;
  int64_t completion = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    std::optional<ChoiceText> c = collect_choice(req, cr, choices[i]);
    if (!c) return cancel_from(i + 1);  // the client left: the other choices go too
    if (auto e = generation_error(c->result, cfg_.server.request_timeout_s)) {
      note_result(c->result);
      cancel_from(i + 1);
      throw *e;
    }
    json one = answer(ids.id, ids.created, model_id_, ids.echo + c->text, finish_reason(c->result.stop_reason), usage_json(c->result),
                      cr.return_token_ids ? &c->result.tokens : nullptr);
    if (cr.top_logprobs >= 0) {
      std::lock_guard lk(choices[i].ch->mu);
      one["choices"][0]["logprobs"] = logprobs_json(choices[i].ch->logprobs, ids, ids.echo.size());
    }
    one["choices"][0]["index"] = i;
    list.push_back(one["choices"][0]);
    completion += static_cast<int64_t>(c->result.tokens.size());
    if (i == 0) {
      first = c->result;
      body = std::move(one);
    }
  }
  body["choices"] = std::move(list);
  body["usage"] = choices_usage(first, completion);
  note_result(first);
  t_access.completion_tokens = completion;
  res.set_content(dump(body), "application/json");
}

// A streamed answer, between the provider's calls (shared by them and the releaser): one state
// per choice. With `stop`, a choice's text goes through StopStrings: at its first stop string
// nothing more is sent for it, its sequence is cancelled, and it ends (finish "stop") once the
// cancelled result arrives. The stream ends when every choice has.
struct Service::ChatStreamState {
  struct One {
    std::shared_ptr<ChatChannel> ch;
    RequestId rid;
    StreamingDetokenizer detok;
    StopStrings stops;
    bool role_sent = false;
    bool finished = false;
    size_t text_bytes = 0;  // of its text sent so far (completions' text_offset)
  };
  std::vector<One> choices;
  AnswerIds ids;
  std::string model_id;
  bool with_ids, with_usage;
  bool logprobs;  // the request asked for them: each token's chunk carries its own
  std::optional<SequenceResult> first;  // choice 0's result, for the usage
  int64_t completion = 0;

  ChatStreamState(const ChatRequest& cr, const AnswerIds& i, std::vector<Choice> cs, std::string model, const Tokenizer& t)
      : ids(i), model_id(std::move(model)), with_ids(cr.return_token_ids), with_usage(cr.include_usage), logprobs(cr.top_logprobs >= 0) {
    for (Choice& c : cs) choices.push_back(One{std::move(c.ch), c.rid, StreamingDetokenizer(t), StopStrings(cr.stop)});
  }
  json chunk(size_t index, json delta, json finish) const {
    json j = ids.text_completion ? text_chunk(ids.id, ids.created, model_id, delta.value("content", ""), std::move(finish))
                                 : chat_chunk(ids.id, ids.created, model_id, std::move(delta), std::move(finish));
    j["choices"][0]["index"] = index;
    return j;
  }
  bool all_finished() const {
    return std::all_of(choices.begin(), choices.end(), [](const One& o) { return o.finished; });
  }
};

// Streaming: the provider runs on this worker thread after the handler returns, pulling tokens as
// the scheduler produces them. It wakes at least every 100 ms to notice a client that went away
// (is_writable fails) and end the response: the releaser then cancels the sequences, which frees
// their KV before the next step.
void Service::chat_stream(const ChatRequest& cr, const AnswerIds& ids, std::vector<Choice> choices, HttpResponse& res) {
  auto st = std::make_shared<ChatStreamState>(cr, ids, std::move(choices), model_id_, *tokenizer_);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [this, st](size_t, DataSink& sink) { return chat_stream_step(*st, sink); },
      [this, st](bool) {
        bool cut = false;
        for (const ChatStreamState::One& c : st->choices)
          if (!c.finished) scheduler_->cancel(c.rid), cut = true;  // the client went away (or the server is stopping)
        if (cut) metrics_.count_cancelled_by_client();
        --in_flight_;
      });
}

bool Service::chat_stream_step(ChatStreamState& st, DataSink& sink) {
  auto send = [&sink](const json& j) {
    const std::string s = "data: " + dump(j) + "\n\n";
    return sink.write(s.data(), s.size()) || client_closed();
  };
  const auto wait = std::chrono::milliseconds(std::max<int64_t>(10, 100 / static_cast<int64_t>(st.choices.size())));
  for (size_t i = 0; i < st.choices.size(); ++i)
    if (!st.choices[i].finished && !stream_choice(st, i, wait, sink, send)) return false;
  if (!st.all_finished()) return true;
  if (st.first) {
    note_result(*st.first);
    t_access.completion_tokens = st.completion;
  }
  // As OpenAI: usage only when asked for, in a chunk of its own with no choices.
  if (st.with_usage && st.first) {
    json usage = st.chunk(0, json::object(), nullptr);
    usage["choices"] = json::array();
    usage["usage"] = choices_usage(*st.first, st.completion);
    if (!send(usage)) return false;
  }
  const std::string done = "data: [DONE]\n\n";
  if (!sink.write(done.data(), done.size())) return false;
  sink.done();
  return true;
}

bool Service::stream_choice(ChatStreamState& st, size_t i, std::chrono::milliseconds wait, DataSink& sink,
                            const std::function<bool(const json&)>& send) {
  ChatStreamState::One& c = st.choices[i];
  std::vector<int32_t> fresh;
  std::vector<TokenLogprob> lps;
  std::optional<SequenceResult> result;
  {
    ChatChannel& ch = *c.ch;
    std::unique_lock lk(ch.mu);
    ch.cv.wait_for(lk, wait, [&] { return ch.tokens.size() > ch.taken || ch.result.has_value(); });
    fresh.assign(ch.tokens.begin() + static_cast<std::ptrdiff_t>(ch.taken), ch.tokens.end());
    if (st.logprobs) lps.assign(ch.logprobs.begin() + static_cast<std::ptrdiff_t>(ch.taken), ch.logprobs.end());
    ch.taken = ch.tokens.size();
    result = ch.result;
  }
  if (!result && !sink.is_writable()) return client_closed();
  if (!c.role_sent) {
    c.role_sent = true;
    // Chat opens with the role; a text completion with the echoed prompt, if asked for.
    const bool opening = !st.ids.text_completion || !st.ids.echo.empty();
    if (opening && !send(st.chunk(i, {{"role", "assistant"}, {"content", st.ids.echo}}, nullptr))) return false;
  }
  const bool was_stopped = c.stops.stopped();
  for (size_t k = 0; k < fresh.size(); ++k) {
    const int32_t t = fresh[k];
    if (c.stops.stopped()) break;
    std::string text = is_text(t) ? c.detok.push(t) : std::string();
    if (!c.stops.empty()) text = c.stops.push(text);
    if (text.empty() && !st.with_ids && !(st.logprobs && is_text(t))) continue;
    json j = st.chunk(i, {{"content", text}}, nullptr);
    if (st.with_ids) j["choices"][0]["token_ids"] = {t};
    if (st.logprobs && k < lps.size())
      j["choices"][0]["logprobs"] = logprobs_json(std::span<const TokenLogprob>(&lps[k], 1), st.ids, st.ids.echo.size() + c.text_bytes);
    c.text_bytes += text.size();
    if (!send(j)) return false;
  }
  if (c.stops.stopped() && !was_stopped && !result) scheduler_->cancel(c.rid);
  if (!result) return true;
  c.finished = true;
  return chat_stream_end(st, i, *result, send);
}

bool Service::chat_stream_end(ChatStreamState& st, size_t i, SequenceResult& result, const std::function<bool(const json&)>& send) {
  ChatStreamState::One& c = st.choices[i];
  // The text held back (an unfinished character, a possible stop string) first: it may still hold
  // a stop string, which decides the finish reason.
  std::string tail = c.stops.stopped() ? std::string() : c.detok.flush();
  if (!c.stops.empty()) tail = c.stops.push(tail) + c.stops.finish();
  if (c.stops.stopped()) result.stop_reason = StopReason::StopString;
  if (i == 0) st.first = result;
  st.completion += static_cast<int64_t>(result.tokens.size());
  if (auto e = generation_error(result, cfg_.server.request_timeout_s)) return send(e->body());
  if (!tail.empty() && !send(st.chunk(i, {{"content", tail}}, nullptr))) return false;
  return send(st.chunk(i, json::object(), finish_reason(result.stop_reason)));
}

}  // namespace folio
