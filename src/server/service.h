// Service: `folio serve` as an object: the HTTP API in front of a Scheduler over one loaded model.
//
// Lifecycle, in the order a deployment sees it:
//   Service(cfg)  validates what needs no model (API key file, attention type, dtypes)
//   bind()        opens host:port (port 0 picks a free one) and returns the port
//   start()       serves on a background thread: liveness is up, readiness is not
//   load()        loads the model, builds the KV pool and the scheduler: /readyz turns 200
//   shutdown(g)   stops taking /v1 work (503), waits up to g for in-flight requests, closes
//
// Endpoints: POST /v1/chat/completions (OpenAI format, SSE with stream: true; image_url data URIs
// are read as pages by an OCR model), POST /v1/completions (the text API: a prompt, no template),
// POST /v1/ocr (PDFs / images in, markdown + per-page JSON out,
// SSE per page with stream: true; see ocr_request.h and ocr_job.h), GET /v1/models (one entry per
// served name) and /v1/models/{name},
// GET <server.health_path> (liveness), GET /readyz (model loaded, not draining, queue not full),
// GET /metrics (Prometheus). Every /v1/ route goes through the same gate: API key (Bearer, when
// server.api_keys_file is set), per-key rate limit, and draining; bodies over server.max_body_bytes
// get 413 before they are read. Errors use OpenAI's shape {"error": {"message", "type", "code"}}.
// Connections belong to the transport (http_server.h: deadlines per phase, caps); a client that
// leaves cancels its request within a decode step, streamed or not.
// Every answered request, probes included, gets an access line (access_log.h).
//
// The model: an OCR model directory (ocr_model.h: folio-mini-ocr, Unlimited-OCR) is loaded as an
// OcrModel, whose decoder also answers text-only chat; anything else as a LoadedModel (text only:
// /v1/ocr and images are then refused with 400). Prepared OCR references are kept in a
// ReferenceCache of inference.reference_cache_bytes (hits / misses / bytes in /metrics).
//
// Extension point: add_route() mounts another /v1/ endpoint behind the same gate, counted in
// /metrics, with the scheduler and model to submit to.
//
// Files: service.cpp the lifecycle, the gate, the routes and the small endpoints; ocr_endpoint.cpp
// POST /v1/ocr; chat_endpoints.cpp chat and text completions; service_io.h what they share about
// answering (JSON errors, the access record, server-sent events).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/sequence_request.h"
#include "server/api_keys.h"
#include "server/http_router.h"
#include "server/metrics.h"
#include "server/rate_limiter.h"
#include "server/reference_cache.h"
#include "server/request_ids.h"
#include "server/server_config.h"

namespace folio {

// Held by pointer or named in signatures only: defined in the headers the .cpp files include.
class AccessLog;
class Decoder;
class HttpServer;
class OcrJob;
class OcrModel;
class Scheduler;
class ServingEngine;
struct ChatChannel;  // service_io.h: a text generation's tokens and result, for the thread answering it
struct ChatRequest;
struct HttpServerOptions;
struct TokenLogprob;
struct UploadedFile;

class Service {
 public:
  // Throws Error(InvalidInput / Unsupported) naming the config key at fault, Error(Io) when
  // server.access_log names a file that cannot be opened.
  explicit Service(ServerConfig cfg);
  ~Service();  // shuts down without grace if still running
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Throws Error(Io) naming server.host / server.port if the address cannot be bound.
  int bind();
  void start();
  // Throws Error (InvalidInput for a bad checkpoint, Unsupported for a setting the engine lacks).
  void load();
  void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // Blocks until the HTTP server has stopped.
  void wait();

  int port() const { return port_; }
  bool ready() const;
  const ServerConfig& config() const { return cfg_; }
  const std::string& model_id() const { return model_id_; }

  // The engine, once loaded (null before load()).
  Scheduler* scheduler();
  Decoder* decoder();
  OcrModel* ocr_model();  // null for a text model
  ServerMetrics& metrics() { return metrics_; }
  ReferenceCacheStats reference_cache_stats() const;

  // Mounts `handler` for `method` ("GET" or "POST") on `path` (under /v1/) behind the gate; call
  // before start(). A handler reports errors by throwing ApiError or folio::Error (-> 400/500).
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  void add_route(const std::string& method, const std::string& path, Handler handler);

 private:
  // The transport's settings from server.*, and its hooks (below).
  HttpServerOptions transport_options() const;
  // Every request: the gate, then its route (404 / 405 when none), errors as JSON.
  void handle(HttpRequest& req, HttpResponse& res);
  void route(HttpRequest& req, HttpResponse& res);
  // Probes and metrics: answered on the I/O thread, whatever the workers are doing.
  bool is_quick(const HttpRequest& req) const;
  // Returns whether it answered the request (then nothing else runs for it).
  bool gate(const HttpRequest& req, HttpResponse& res);
  // An error status found before a handler (by the transport or the router) as a JSON body.
  void answer_http_error(const HttpRequest& req, HttpResponse& res);
  void log_request(const HttpRequest& req, const HttpResponse& res);
  // The routes: probes, metrics, models, chat, OCR, tokenize.
  void mount_endpoints();
  // Routes `method` (GET or POST) on `path` to `handler`.
  void mount(const std::string& method, const std::string& path, Handler handler);
  // POST /v1/chat/completions: documents and images to the OCR model (chat_documents), text to the
  // scheduler (chat_sequence, submit_chat), answered whole (chat_whole) or as SSE (chat_stream).
  // Who an answer is (its id and time) and how it is written: a chat completion (message, delta)
  // or a text completion (/v1/completions: text, after the prompt's text when `echo` is set).
  struct AnswerIds {
    std::string id;
    int64_t created;
    bool text_completion = false;
    std::string echo;
  };
  void chat_completions(const HttpRequest& req, HttpResponse& res);
  bool chat_documents(const HttpRequest& req, ChatRequest& cr, const AnswerIds& ids, HttpResponse& res);
  SequenceRequest chat_sequence(const ChatRequest& cr, std::shared_ptr<ChatChannel> ch);
  // A request generating after `prompt` (token ids), within the server's limits, as chat's.
  SequenceRequest text_sequence(std::vector<int32_t> prompt, const ChatRequest& cr, std::shared_ptr<ChatChannel> ch);
  // POST /v1/completions (completion_request.h), answered as chat is.
  void completions(const HttpRequest& req, HttpResponse& res);
  RequestId submit_chat(SequenceRequest sr);
  // Whether a generated token is part of the answer's text: not EOS nor another control token
  // (special tokens are left out, as vLLM's skip_special_tokens and llama-server do).
  bool is_text(int32_t token) const;
  // The `logprobs` of an answer's tokens (text tokens only): chat's {"content": [...]}, or the
  // legacy completions object whose text offsets start at `offset`.
  nlohmann::json logprobs_json(std::span<const TokenLogprob> ts, const AnswerIds& ids, size_t offset) const;
  // One choice being generated (a request has `n` of them): its channel and scheduler id.
  struct Choice {
    std::shared_ptr<ChatChannel> ch;
    RequestId rid;
  };
  // Submits cr.n sequences made by `make`, the i-th sampled with seed + i; when one is refused,
  // the ones already submitted are cancelled and the refusal thrown.
  std::vector<Choice> submit_choices(const ChatRequest& cr, const std::function<SequenceRequest(std::shared_ptr<ChatChannel>)>& make);
  // A choice answered whole: its result and text (stop strings applied), or nullopt when the client
  // left first (the choice is then cancelled and counted).
  struct ChoiceText {
    SequenceResult result;
    std::string text;
  };
  std::optional<ChoiceText> collect_choice(const HttpRequest& req, const ChatRequest& cr, const Choice& c);
  void chat_whole(const HttpRequest& req, const ChatRequest& cr, const AnswerIds& ids, const std::vector<Choice>& choices, HttpResponse& res);
  void chat_stream(const ChatRequest& cr, const AnswerIds& ids, std::vector<Choice> choices, HttpResponse& res);
  struct ChatStreamState;
  // One call of the stream's provider: each choice's news, then, once all have ended, usage when
  // asked for and [DONE] (false: the client is gone).
  bool chat_stream_step(ChatStreamState& st, DataSink& sink);
  // Choice i's tokens that arrived within `wait` (false: the client is gone).
  bool stream_choice(ChatStreamState& st, size_t i, std::chrono::milliseconds wait, DataSink& sink,
                     const std::function<bool(const nlohmann::json&)>& send);
  // The end of choice i: held-back text, then its finish chunk or its error.
  bool chat_stream_end(ChatStreamState& st, size_t i, SequenceResult& result, const std::function<bool(const nlohmann::json&)>& send);
  // 404 model_not_found unless `model` is empty or one of the served names (model.served_names).
  void check_model(const std::string& model) const;
  void ocr(const HttpRequest& req, HttpResponse& res);
  // POST /tokenize and /detokenize (server/tokenize_request.h).
  void tokenize(const HttpRequest& req, HttpResponse& res);
  void detokenize(const HttpRequest& req, HttpResponse& res);
  // An OcrJob over `files` (ApiError 400 when the model reads no images).
  std::unique_ptr<OcrJob> start_ocr_job(std::vector<UploadedFile> files, const std::string& pages, std::optional<int64_t> max_tokens,
                                        bool page_images = false);
  void check_loaded(HttpResponse& res) const;
  // server.cors_origins: when the request's Origin is allowed, sets the CORS headers (for a
  // preflight OPTIONS also the methods the path takes) and returns true.
  bool cors_headers(const HttpRequest& req, HttpResponse& res) const;
  // Wraps a handler: catches ApiError / folio::Error into JSON errors.
  Handler guarded(Handler h);

  ServerConfig cfg_;
  std::string model_id_;                    // the name answers report: the first served name
  std::vector<std::string> served_names_;   // names requests may use
  ApiKeys keys_;
  RateLimiter limiter_;
  RateLimiter auth_failures_;  // failed authentications per client address
  ServerMetrics metrics_;

  HttpRouter router_;
  std::unique_ptr<HttpServer> http_;
  int port_ = -1;

  std::unique_ptr<ServingEngine> engine_;  // the model and its scheduler
  std::atomic<bool> loaded_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  RequestIds ids_;  // response ids and X-Request-Id
  std::unique_ptr<AccessLog> access_log_;  // one line per answered request (access_log.h)
};

}  // namespace folio
