#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "runtime/default_model.h"
#include "runtime/ocr_model.h"
#include "runtime/scheduler.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/remote_reference_tier.h"
#include "server/service_io.h"
#include "server/serving_engine.h"
#include "server/tokenize_request.h"
#include "server/web_page.h"

namespace folio {

using nlohmann::json;

Service::Service(ServerConfig cfg)
    : cfg_(std::move(cfg)), limiter_(cfg_.server.rate_limit), auth_failures_(cfg_.server.auth_failures_per_minute) {
  engine_ = std::make_unique<ServingEngine>(cfg_);
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
  engine_->load();
  loaded_ = true;
}

Scheduler* Service::scheduler() { return loaded_ ? &engine_->scheduler() : nullptr; }
Decoder* Service::decoder() { return loaded_ ? &engine_->decoder() : nullptr; }
OcrModel* Service::ocr_model() { return loaded_ ? engine_->ocr_model() : nullptr; }
ReferenceCacheStats Service::reference_cache_stats() const { return engine_->reference_cache().stats(); }

bool Service::ready() const {
  if (!loaded_ || draining_) return false;
  return engine_->scheduler().stats().queued < cfg_.inference.max_queued_requests;
}

void Service::shutdown(std::chrono::milliseconds grace) {
  draining_ = true;
  const auto until = std::chrono::steady_clock::now() + grace;
  while (in_flight_ > 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Cancelling what is left ends every waiting handler; then the HTTP threads can finish.
  engine_->stop();
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
  static const char* known[] = {"/", "/v1/chat/completions", "/v1/completions", "/v1/ocr", "/v1/models", "/readyz", "/metrics"};
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
  // The page for a person with a browser (web_page.h): open like the probes; what it sends to the
  // API goes through the gate with the key typed into it. It knows only what it needs to show.
  mount("GET", "/", [this](const HttpRequest&, HttpResponse& res) {
    const json config = {{"model", model_id_}, {"keys", keys_.enabled()}, {"reads_documents", !loaded_ || engine_->ocr_model() != nullptr}};
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; connect-src 'self' blob:; "
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_content(web_page(config), "text/html; charset=utf-8");
  });
  mount("GET", cfg_.server.health_path, [](const HttpRequest&, HttpResponse& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  mount("GET", "/readyz", [this](const HttpRequest&, HttpResponse& res) {
    std::string why;
    if (!loaded_) why = "the model is loading";
    else if (draining_) why = "the server is shutting down";
    else if (engine_->scheduler().stats().queued >= cfg_.inference.max_queued_requests) why = "the wait queue is full";
    if (why.empty()) {
      res.set_content(R"({"status":"ready"})", "application/json");
    } else {
      res.status = 503;
      res.set_content(dump(json{{"status", "not ready"}, {"reason", why}}), "application/json");
    }
  });
  mount("GET", "/metrics", [this](const HttpRequest&, HttpResponse& res) {
    std::optional<SchedulerStats> s;
    if (loaded_) s = engine_->scheduler().stats();
    const ReferenceCacheStats cache = engine_->reference_cache().stats();
    const ConnectionStats conns{http_->open_connections(), http_->refused_connections()};
    std::optional<RemoteTierStats> remote;
    if (engine_->loaded() && engine_->remote()) remote = engine_->remote()->stats();
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
  if (tr.add_special && engine_->decoder().config().bos_id >= 0) ids.push_back(engine_->decoder().config().bos_id);
  const std::vector<int32_t> text = engine_->tokenizer().encode(tr.content);
  ids.insert(ids.end(), text.begin(), text.end());
  json tokens = json::array();
  for (int32_t id : ids) {
    if (tr.with_pieces) tokens.push_back({{"id", id}, {"piece", engine_->tokenizer().token_bytes(id)}});
    else tokens.push_back(id);
  }
  res.set_content(dump(json{{"tokens", tokens}}), "application/json");
}

void Service::detokenize(const HttpRequest& req, HttpResponse& res) {
  check_loaded(res);
  const DetokenizeRequest dr = parse_detokenize_request(req.body);
  const int32_t vocab = engine_->tokenizer().vocab_size();
  for (int32_t id : dr.tokens)
    if (id < 0 || id >= vocab)
      throw bad_request("invalid_value", "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  res.set_content(dump(json{{"content", engine_->tokenizer().decode(dr.tokens)}}), "application/json");
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
