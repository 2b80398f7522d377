// folio bench serve: the service under load (docs/bench-contract.md, "serve").
//
// Starts `folio serve` in this process on a free loopback port (or talks to --url), sends
// --requests requests from --concurrency client threads (each sends its next request as soon as
// the previous one is answered), and reports throughput, latency percentiles, errors and the
// server's resident memory after the first 50 answers and at the end (from its /metrics), so a leak
// shows as growth.
//
// Requests: `ocr` posts --file (default examples/sample-typeset.pdf) as JSON base64 to /v1/ocr;
// `chat` streams a greedy text chat completion of --max-tokens tokens (EOS ignored); `mixed` sends
// them alternately (a model that serves both, e.g. Unlimited-OCR). `by_kind` in the JSON counts
// each kind's answers and how many distinct answers the same request got. Time to first token:
// for chat, measured here (first content chunk); for ocr, whose answer comes whole, the client's
// latency minus the server's decode time (first to last token, from the result's stats), so it
// includes upload, page preparation and queueing as a client sees them. Time per output token:
// for chat, measured here between the first and last chunk; for ocr, the server's decode time over
// tokens - 1.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <httplib.h>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/json_output.h"
#include "cmdline/commands.h"
#include "core/content_hash.h"
#include "core/error.h"
#include "runtime/default_model.h"
#include "server/base64.h"
#include "server/service.h"

namespace folio::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchServeArgs {
  std::string url, model, mmproj, kind = "ocr", file, pages, json;
  int concurrency = 1, requests = 100, threads = 0, batch_size = 16;
  int64_t max_tokens = 0;
  bool no_cache = false;
  bool logprobs = false;
  bool mixed_rows = false;
};

struct Sample {
  std::string kind;    // ocr or chat
  std::string answer;  // the markdown, or the streamed text
  bool ok = false;
  std::string error;
  double latency_ms = 0, ttft_ms = 0, tpot_ms = 0;
  int64_t tokens = 0;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Nearest-rank percentile of `v` (sorted here); 0 for none.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double metric(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_invalid("--file: cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

Sample send_ocr(httplib::Client& cli, const std::string& body) {
  Sample s;
  const auto t0 = Clock::now();
  auto r = cli.Post("/v1/ocr", body, "application/json");
  s.latency_ms = ms_since(t0);
  if (!r) return s.error = "connection: " + httplib::to_string(r.error()), s;
  if (r->status != 200) return s.error = "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 200), s;
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("stats")) return s.error = "unreadable response", s;
  const double decode_ms = j["stats"].value("decode_ms", 0.0);
  s.tokens = j["usage"].value("completion_tokens", int64_t{0});
  s.answer = j.value("markdown", std::string());
  s.ttft_ms = s.latency_ms - decode_ms;
  s.tpot_ms = s.tokens > 1 ? decode_ms / static_cast<double>(s.tokens - 1) : 0;
  s.ok = true;
  return s;
}

Sample send_chat(httplib::Client& cli, const std::string& body) {
  Sample s;
  const auto t0 = Clock::now();
  std::string buf;
  std::optional<Clock::time_point> first, last;
  int64_t usage_tokens = -1;
  std::string failure;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buf.append(data, n);
    for (size_t end; (end = buf.find("\n\n")) != std::string::npos; buf.erase(0, end + 2)) {
      const std::string ev = buf.substr(0, end);
      if (ev.rfind("data: ", 0) != 0 || ev == "data: [DONE]") continue;
      const json j = json::parse(ev.substr(6), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) failure = j["error"].value("message", "error");
      if (j.contains("usage")) usage_tokens = j["usage"].value("completion_tokens", int64_t{0});
      if (j.contains("choices") && !j["choices"].empty() && j["choices"][0]["delta"].contains("content") &&
          !j["choices"][0]["delta"]["content"].get<std::string>().empty()) {
        s.answer += j["choices"][0]["delta"]["content"].get<std::string>();
        if (const json& lp = j["choices"][0].value("logprobs", json()); !lp.is_null()) s.answer += "\x1f" + lp.dump();
        if (!first) first = Clock::now();
        last = Clock::now();
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = cli.send(req, res, err);
  s.latency_ms = ms_since(t0);
  if (!sent) return s.error = "connection: " + httplib::to_string(err), s;
  if (res.status != 200) return s.error = "HTTP " + std::to_string(res.status), s;
  if (!failure.empty()) return s.error = failure, s;
  if (usage_tokens < 0 || !first) return s.error = "stream ended without content or usage", s;
  s.tokens = usage_tokens;
  s.ttft_ms = std::chrono::duration<double, std::milli>(*first - t0).count();
  s.tpot_ms = s.tokens > 1 ? std::chrono::duration<double, std::milli>(*last - *first).count() / static_cast<double>(s.tokens - 1) : 0;
  s.ok = true;
  return s;
}

void check_args(const BenchServeArgs& a) {
  if (a.concurrency < 1) throw_invalid("--concurrency must be at least 1, got " + std::to_string(a.concurrency));
  if (a.requests < 1) throw_invalid("--requests must be at least 1, got " + std::to_string(a.requests));
  if (a.kind != "ocr" && a.kind != "chat" && a.kind != "mixed")
    throw_invalid("--kind must be ocr, chat or mixed, got '" + a.kind + "'");
  if (a.max_tokens < 0) throw_invalid("--max-tokens must not be negative");
}

// The request of one kind every client sends (greedy chat, so that equal requests get equal answers).
std::string request_payload(const BenchServeArgs& a, const std::string& kind) {
  json body;
  if (kind == "ocr") {
    const std::string file = a.file.empty() ? shipped_path("examples/sample-typeset.pdf") : a.file;
    body = {{"file", encode_base64(read_file(file))}, {"filename", std::filesystem::path(file).filename().string()}};
    if (!a.pages.empty()) body["pages"] = a.pages;
    if (a.max_tokens > 0) body["max_tokens"] = a.max_tokens;
  } else {
    body = {{"messages", {{{"role", "user"}, {"content", "Write a long story about a lighthouse."}}}},
            {"max_tokens", a.max_tokens > 0 ? a.max_tokens : 128},
            {"ignore_eos", true},
            {"temperature", 0},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}};
    // Each token's logprob as the server prints it (the shortest text that reads back as the same
    // float): the answers then differ when any bit of the chosen tokens' logits does.
    if (a.logprobs) body["logprobs"] = true;
  }
  return body.dump();
}

// The server under load: in this process unless --url names one (which must be ready).
struct Target {
  std::unique_ptr<Service> service;  // null with --url
  std::string host = "127.0.0.1";
  int port = 0;

  std::unique_ptr<httplib::Client> client(const std::string& url) const {
    auto c = url.empty() ? std::make_unique<httplib::Client>(host, port) : std::make_unique<httplib::Client>(url);
    c->set_read_timeout(3600, 0);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // as a latency-minded client would: the request is headers + body
    return c;
  }
};

Target start_target(const BenchServeArgs& a) {
  Target t;
  if (!a.url.empty()) {
    httplib::Client probe(a.url);
    auto r = probe.Get("/readyz");
    if (!r || r->status != 200) throw_invalid("--url " + a.url + ": the server is not ready (GET /readyz failed)");
    return t;
  }
  ServerConfig c;
  c.model.path = a.model;
  c.model.mmproj = a.mmproj;
  c.server.host = t.host;
  c.server.port = 0;
  c.inference.threads = a.threads;
  c.inference.batch_size = a.batch_size;
  c.inference.batch_invariant = !a.mixed_rows;
  c.inference.max_queued_requests = std::max<int64_t>(64, a.concurrency);
  if (a.no_cache) {
    // Every request prepares its pages and prefills its reference, as distinct documents would.
    c.inference.reference_cache_bytes = 0;
    c.inference.prefix_cache_bytes = 0;
  }
  // Few malloc arenas: the server has a hundred HTTP threads, and glibc's default (8 per core)
  // lets freed memory scatter over many arenas, so RSS creeps up for thousands of requests
  // (docs/measurements.md).
  mallopt(M_ARENA_MAX, 2);
  t.service = std::make_unique<Service>(c);
  t.port = t.service->bind();
  t.service->start();
  t.service->load();
  return t;
}

struct LoadRun {
  std::vector<Sample> samples;
  double wall_s = 0;
  double rss_after_first = 0;  // server RSS right after the first 50 answers
  std::string metrics_at_end;  // /metrics after the last answer
  std::string served_model;    // the first id of the server's /v1/models ("" when it did not answer)
};

// --concurrency clients send --requests requests between them; /metrics is read once after the
// first 50 answers and once at the end, so the probe does not slow the run down.
// --kind mixed alternates: even requests OCR, odd ones chat.
LoadRun run_load(const BenchServeArgs& a, const Target& target) {
  const std::string ocr = a.kind == "chat" ? "" : request_payload(a, "ocr"), chat = a.kind == "ocr" ? "" : request_payload(a, "chat");
  LoadRun run;
  run.samples.resize(static_cast<size_t>(a.requests));
  const int window = std::min(50, a.requests);
  std::atomic<int> next{0}, completed{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < a.concurrency; ++w)
    workers.emplace_back([&] {
      auto cli = target.client(a.url);
      for (int i; (i = next++) < a.requests;) {
        const bool is_ocr = a.kind == "ocr" || (a.kind == "mixed" && i % 2 == 0);
        Sample& s = run.samples[static_cast<size_t>(i)];
        s = is_ocr ? send_ocr(*cli, ocr) : send_chat(*cli, chat);
        s.kind = is_ocr ? "ocr" : "chat";
        if (++completed == window)
          if (auto m = target.client(a.url)->Get("/metrics"); m && m->status == 200)
            run.rss_after_first = metric(m->body, "folio_process_rss_bytes");
      }
    });
  for (auto& t : workers) t.join();
  run.wall_s = ms_since(t0) / 1000.0;
  if (auto m = target.client(a.url)->Get("/metrics"); m && m->status == 200) run.metrics_at_end = m->body;
  if (auto m = target.client(a.url)->Get("/v1/models"); m && m->status == 200) {
    const json models = json::parse(m->body, nullptr, false);
    if (models.is_object() && models.contains("data") && models["data"].is_array() && !models["data"].empty())
      run.served_model = models["data"][0].value("id", "");
  }
  return run;
}

// Per kind sent: answered, failed, and how many different answers the answered ones got (every
// request of a kind is the same and decodes greedily, so 1 unless batching, a replica or a cache
// changed a token), with that answer's hash when there is one.
json by_kind(const std::vector<Sample>& samples) {
  json out = json::object();
  std::map<std::string, std::set<std::string>> answers;
  for (const Sample& s : samples) {
    if (s.kind.empty()) continue;
    json& k = out[s.kind];
    if (k.is_null()) k = {{"ok", 0}, {"errors", 0}};
    k[s.ok ? "ok" : "errors"] = k[s.ok ? "ok" : "errors"].get<int64_t>() + 1;
    if (s.ok) answers[s.kind].insert(s.answer);
  }
  for (auto& [kind, set] : answers) {
    out[kind]["distinct_answers"] = set.size();
    // The one answer's SHA-256 (first 16 hex digits), to compare runs: a cluster with one process.
    if (set.size() == 1) out[kind]["answer_sha256"] = Sha256().update(*set.begin()).hex().substr(0, 16);
  }
  return out;
}

// The run's JSON (docs/bench-contract.md, "serve"), printed as one line too; false when any
// request failed.
bool report(const BenchServeArgs& a, const LoadRun& run, int port) {
  std::vector<double> ttft, tpot, latency;
  int64_t ok = 0, errors = 0, tokens = 0;
  json error_messages = json::array();
  for (const Sample& s : run.samples) {
    if (!s.ok) {
      ++errors;
      if (error_messages.size() < 5) error_messages.push_back(s.error);
      continue;
    }
    ++ok;
    tokens += s.tokens;
    ttft.push_back(s.ttft_ms);
    if (s.tokens > 1) tpot.push_back(s.tpot_ms);
    latency.push_back(s.latency_ms);
  }
  const std::string& m = run.metrics_at_end;
  const double wall_s = run.wall_s, rss_last = metric(m, "folio_process_rss_bytes");
  const json j = {{"suite", "serve"},
                  {"kind", a.kind},
                  {"url", a.url.empty() ? "in-process http://127.0.0.1:" + std::to_string(port) : a.url},
                  // What answered: the in-process server's --model (or the shipped default), or what
                  // a --url server says it serves.
                  {"model", !a.url.empty() ? (run.served_model.empty() ? "unknown" : run.served_model)
                            : a.model.empty() ? std::string(kDefaultOcrModel) + " (shipped)" : a.model},
                  {"served_model", run.served_model},
                  {"concurrency", a.concurrency},
                  {"requests", a.requests},
                  {"ok", ok},
                  {"errors", errors},
                  {"lost", a.requests - ok - errors},
                  {"error_messages", error_messages},
                  {"wall_s", wall_s},
                  {"requests_per_s", static_cast<double>(ok) / wall_s},
                  {"output_tokens", tokens},
                  {"output_tokens_per_s", static_cast<double>(tokens) / wall_s},
                  {"ttft_ms_p50", percentile(ttft, 50)},
                  {"ttft_ms_p99", percentile(ttft, 99)},
                  {"tpot_ms_p50", percentile(tpot, 50)},
                  {"tpot_ms_p99", percentile(tpot, 99)},
                  {"latency_ms_p50", percentile(latency, 50)},
                  {"latency_ms_p99", percentile(latency, 99)},
                  {"server_rss_after_first50_bytes", run.rss_after_first},
                  {"server_rss_at_end_bytes", rss_last},
                  {"server_rss_peak_bytes", metric(m, "folio_process_rss_peak_bytes")},
                  {"server_batch_size_max", metric(m, "folio_batch_size_max")},
                  {"server_reference_cache_hits", metric(m, "folio_reference_cache_hits_total")},
                  {"server_prefix_cache_hits", metric(m, "folio_prefix_cache_hits_total")},
                  {"caches", !a.no_cache},
                  {"server_reference_cache_misses", metric(m, "folio_reference_cache_misses_total")},
                  {"by_kind", by_kind(run.samples)}};
  JsonOutput(a.json).write(j);
  std::printf("serve %s: %lld/%d ok, %lld errors, %.2f req/s, %.1f output tokens/s; TTFT p50 %.0f ms p99 %.0f ms; "
              "TPOT p50 %.2f ms p99 %.2f ms; server RSS after the first 50 %.1f MiB, at the end %.1f MiB; by kind %s\n",
              a.kind.c_str(), static_cast<long long>(ok), a.requests, static_cast<long long>(errors), static_cast<double>(ok) / wall_s,
              static_cast<double>(tokens) / wall_s, percentile(ttft, 50), percentile(ttft, 99), percentile(tpot, 50), percentile(tpot, 99),
              run.rss_after_first / 1048576.0, rss_last / 1048576.0, j["by_kind"].dump().c_str());
  return errors == 0;
}

int run_bench_serve(const BenchServeArgs& a) {
  check_args(a);
  const JsonOutput checked(a.json);  // before the load runs, not after
  Target target = start_target(a);
  const LoadRun run = run_load(a, target);
  if (target.service) target.service->shutdown();
  return report(a, run, target.port) ? 0 : 1;
}

}  // namespace

SubRunner add_bench_serve(CLI::App& bench) {
  auto a = std::make_shared<BenchServeArgs>();
  CLI::App* s = bench.add_subcommand("serve", "The service under load: throughput, TTFT/TPOT percentiles, errors, server RSS");
  s->add_option("--url", a->url, "A running server (default: start one in this process on a free loopback port)");
  s->add_option("--model", a->model, "Model of the in-process server (default: the shipped model)");
  s->add_option("--mmproj", a->mmproj, "With a .gguf --model: its vision tower (llama.cpp's mmproj file), for OCR");
  s->add_option("--kind", a->kind, "ocr (POST /v1/ocr with --file), chat (streamed greedy text completion) or mixed (alternately)")
      ->capture_default_str();
  s->add_option("--file", a->file, "Document each OCR request sends (default: examples/sample-typeset.pdf)");
  s->add_option("--pages", a->pages, "Pages of --file to read (default: all)");
  s->add_option("--max-tokens", a->max_tokens, "Output tokens per request (0: the model's bound for ocr, 128 for chat)")->capture_default_str();
  s->add_option("--concurrency", a->concurrency, "Clients sending at once")->capture_default_str();
  s->add_option("--requests", a->requests, "Requests in all")->capture_default_str();
  s->add_option("--threads", a->threads, "Compute threads of the in-process server (0 = one per core)")->capture_default_str();
  s->add_option("--batch-size", a->batch_size, "inference.batch_size of the in-process server")->capture_default_str();
  s->add_flag("--logprobs", a->logprobs,
              "Chat requests ask for each token's logprob, which becomes part of the answer compared across requests");
  s->add_flag("--mixed-rows", a->mixed_rows,
              "In-process server with inference.batch_invariant false (one forward pass per step over every row)");
  s->add_flag("--no-cache", a->no_cache,
              "In-process server without the page and reference KV caches (every request encoded and prefilled, as distinct documents would be)");
  s->add_option("--json", a->json, "Output JSON file")->required();
  return {s, [a] { return run_bench_serve(*a); }};
}

}  // namespace folio::cli
