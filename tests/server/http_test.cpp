// folio serve over real HTTP on loopback: the in-process Service on an ephemeral port, spoken to
// with httplib's client (and a raw socket where a client must vanish mid-stream).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <tuple>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "kernels/cpu/matmul.h"
#include "runtime/generator.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "server/service.h"
#include "http_test_util.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path g_dir;


// The JSON payloads of an SSE body ("data: ..." events), and whether it ended with [DONE].
std::vector<json> sse_events(const std::string& body, bool& done) {
  std::vector<json> out;
  done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    std::string data = ev.substr(6);
    EXPECT_FALSE(done) << "event after [DONE]";
    if (data == "[DONE]") done = true;
    else out.push_back(json::parse(data));
  }
  EXPECT_EQ(pos, body.size()) << "trailing bytes after the last event";
  return out;
}

class Http : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = fs::temp_directory_path() / ("folio_http_test_" + std::to_string(getpid()));
    write_random_checkpoint(preset_config("llama", "tiny"), (g_dir / "tiny").string(), 21, DType::F32);
    // A bigger model whose requests last long enough to be seen running, queued and cut off.
    const ModelConfig slow = slow_llama_config();
    write_random_checkpoint(slow, (g_dir / "slow").string(), 22, DType::F32);
    reference_ = new LoadedModel(load_model((g_dir / "tiny").string()));
    saved_rows_ = kernels::matmul_gemm_min_rows();
    // Every row on the GEMV path: a token's result then does not depend on the batch, which is
    // what lets batched serving match Generator token for token.
    kernels::set_matmul_gemm_min_rows(int64_t{1} << 40);
  }
  static void TearDownTestSuite() {
    kernels::set_matmul_gemm_min_rows(saved_rows_);
    delete reference_;
    fs::remove_all(g_dir);
  }

  static ServerConfig config(const std::string& model = "tiny") {
    ServerConfig c;
    c.model.path = (g_dir / model).string();
    c.server.port = 0;
    c.attention.decode_window_size = 8;
    c.inference.kv_dtype = "f32";
    c.inference.threads = 1;
    return c;
  }
  std::unique_ptr<Service> serve(const ServerConfig& c) {
    auto s = std::make_unique<Service>(c);
    s->bind();
    s->start();
    s->load();
    return s;
  }
  static httplib::Client client(const Service& s) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(60, 0);
    return c;
  }
  static json chat_body(const std::string& user, int max_tokens, bool stream = false) {
    return {{"model", "tiny"},
            {"messages", {{{"role", "user"}, {"content", user}}}},
            {"max_tokens", max_tokens},
            {"temperature", 0},
            {"stream", stream},
            {"return_token_ids", true}};
  }
  // Greedy tokens of Generator for the prompt the chat template must produce, built here by hand.
  static std::vector<int32_t> expected_prompt(const std::string& user) {
    std::vector<int32_t> p{reference_->config.bos_id};
    auto ids = reference_->tokenizer->encode("<|user|>\n" + user + "\n<|assistant|>\n");
    p.insert(p.end(), ids.begin(), ids.end());
    return p;
  }
  static GenerationResult expected(const std::string& user, int max_tokens) {
    GenerationOptions o;
    o.max_tokens = max_tokens;
    return generate(expected_prompt(user), o);
  }
  // Generator's answer to `prompt` with the server's policy (R-SWA, window 8) and f32 KV.
  static GenerationResult generate(const std::vector<int32_t>& prompt, GenerationOptions o) {
    ThreadPool threads(1);
    KVBlockPool pool(reference_->decoder->kv_layout(DType::F32), 0);
    Generator gen(*reference_->decoder, pool, threads);
    o.policy = {KVPolicyKind::RSwa, 8};
    return gen.generate(prompt, o);
  }
  static std::string text_of(const std::vector<int32_t>& tokens) {
    std::vector<int32_t> ids;
    for (int32_t t : tokens)
      if (t != reference_->config.eos_id && !reference_->tokenizer->is_control(t)) ids.push_back(t);
    // As the server must send it: JSON text, invalid UTF-8 bytes replaced by U+FFFD.
    std::string raw = reference_->tokenizer->decode(ids);
    return json::parse(json(raw).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
  }
  // Polls /metrics until `series` has `value` (or 5 s pass); returns the last text.
  static std::string wait_metric(const Service& s, const std::string& series, double value) {
    auto cli = client(s);
    std::string text;
    for (int i = 0; i < 500; ++i) {
      auto r = cli.Get("/metrics");
      if (r && r->status == 200) {
        text = r->body;
        if (metric(text, series) == value) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return text;
  }

  static LoadedModel* reference_;
  static int64_t saved_rows_;
};
LoadedModel* Http::reference_ = nullptr;
int64_t Http::saved_rows_ = 0;

TEST_F(Http, ChatCompletionMatchesGenerator) {
  auto svc = serve(config());
  auto cli = client(*svc);
  GenerationResult want = expected("hello world", 12);
  auto r = cli.Post("/v1/chat/completions", chat_body("hello world", 12).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny");
  const json& ch = j["choices"][0];
  EXPECT_EQ(ch["token_ids"].get<std::vector<int32_t>>(), want.tokens);
  EXPECT_EQ(ch["message"]["role"], "assistant");
  EXPECT_EQ(ch["message"]["content"], text_of(want.tokens));
  EXPECT_EQ(ch["finish_reason"], want.stop_reason == "eos" ? "stop" : "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], expected_prompt("hello world").size());
  EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
  EXPECT_EQ(j["usage"]["total_tokens"], expected_prompt("hello world").size() + want.tokens.size());
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  auto m = cli.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "tiny");
}

// Control tokens (special added tokens) the model writes are in token_ids but not in the text,
// streamed or not.
TEST_F(Http, ControlTokensAreLeftOutOfTheText) {
  auto svc = serve(config());
  auto cli = client(*svc);
  // Sampled with a fixed seed: greedy decoding of the tiny model never reaches its one control
  // token besides EOS (BOS); this seed writes it.
  json body = chat_body("hello world", 900);
  body["ignore_eos"] = true;
  body["temperature"] = 1.0;
  body["seed"] = 7;
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const json& ch = j["choices"][0];
  const auto ids = ch["token_ids"].get<std::vector<int32_t>>();
  std::string with_control;  // what the text would be with them
  size_t control = 0;
  for (int32_t t : ids) {
    control += reference_->tokenizer->is_control(t) ? 1 : 0;
    with_control += reference_->tokenizer->token_bytes(t);
  }
  ASSERT_GT(control, 0u) << "this prompt no longer makes the tiny model write a control token";
  const std::string content = ch["message"]["content"];
  EXPECT_EQ(content, text_of(ids));
  EXPECT_NE(content.size(), with_control.size());
  body["stream"] = true;
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string streamed;
  bool done = false;
  for (const json& e : sse_events(r->body, done))
    if (e.contains("choices") && !e["choices"].empty() && e["choices"][0]["delta"].contains("content"))
      streamed += e["choices"][0]["delta"]["content"].get<std::string>();
  EXPECT_EQ(streamed, content);
}

TEST_F(Http, StreamingMatchesGenerator) {
  auto svc = serve(config());
  auto cli = client(*svc);
  GenerationResult want = expected("stream me", 20);
  auto r = cli.Post("/v1/chat/completions", chat_body("stream me", 20, true).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  bool done = false;
  auto events = sse_events(r->body, done);
  EXPECT_TRUE(done) << "no data: [DONE]";
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::vector<int32_t> ids;
  for (const json& e : events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    const json& c = e["choices"][0];
    if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
    if (c.contains("token_ids")) for (int32_t t : c["token_ids"]) ids.push_back(t);
  }
  EXPECT_EQ(ids, want.tokens);
  EXPECT_EQ(text, text_of(want.tokens));
  const json& last = events.back();
  EXPECT_EQ(last["choices"][0]["finish_reason"], want.stop_reason == "eos" ? "stop" : "length");
  for (const json& e : events) EXPECT_FALSE(e.contains("usage")) << "usage without stream_options.include_usage";
  // With stream_options.include_usage: one more chunk, no choices, the usage.
  json body = chat_body("stream me", 20, true);
  body["stream_options"] = {{"include_usage", true}};
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  events = sse_events(r->body, done);
  ASSERT_GE(events.size(), 3u);
  EXPECT_TRUE(events.back()["choices"].empty());
  EXPECT_EQ(events.back()["usage"]["completion_tokens"], want.tokens.size());
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], want.stop_reason == "eos" ? "stop" : "length");
  body["stream_options"] = {{"include_usage", "yes"}};
  EXPECT_EQ(cli.Post("/v1/chat/completions", body.dump(), "application/json")->status, 400);
}

// /v1/completions: the prompt as given (BOS, no chat template), the same tokens as Generator,
// whole or streamed, echoed when asked, token-id prompts, and the refusals.
TEST_F(Http, TextCompletionsMatchGenerator) {
  auto svc = serve(config());
  auto cli = client(*svc);
  std::vector<int32_t> prompt{reference_->config.bos_id};
  for (int32_t t : reference_->tokenizer->encode("Once upon a time")) prompt.push_back(t);
  GenerationOptions o;
  o.max_tokens = 16;  // OpenAI's default for completions
  const GenerationResult want = generate(prompt, o);

  json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"return_token_ids", true}};
  auto r = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["token_ids"].get<std::vector<int32_t>>(), want.tokens);
  EXPECT_EQ(j["choices"][0]["text"], text_of(want.tokens));
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  // The same prompt as token ids, echoed.
  body = {{"prompt", prompt}, {"echo", true}, {"max_tokens", 16}};
  r = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], text_of(prompt) + text_of(want.tokens));
  // Streamed: text chunks, then the finish reason, then [DONE].
  body = {{"prompt", {"Once upon a time"}}, {"stream", true}};
  r = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  bool done = false;
  std::string text;
  const std::vector<json> events = sse_events(r->body, done);
  EXPECT_TRUE(done);
  for (const json& e : events) {
    EXPECT_EQ(e["object"], "text_completion");
    text += e["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, text_of(want.tokens));
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], want.stop_reason == "eos" ? "stop" : "length");
  // Refused, naming why.
  auto code = [&](const json& b) {
    auto e = cli.Post("/v1/completions", b.dump(), "application/json");
    EXPECT_EQ(e->status, 400) << e->body;
    return json::parse(e->body)["error"]["code"].get<std::string>();
  };
  EXPECT_EQ(code({{"model", "tiny"}}), "missing_field");
  EXPECT_EQ(code({{"prompt", {"a", "b"}}}), "unsupported_parameter");
  EXPECT_EQ(code({{"prompt", "a"}, {"suffix", "z"}}), "unsupported_parameter");
  EXPECT_EQ(code({{"prompt", {1, -2}}}), "invalid_value");
  EXPECT_EQ(code({{"prompt", {1, 1 << 30}}}), "invalid_value");
  EXPECT_EQ(code({{"prompt", 7}}), "invalid_type");
}

// logprobs: each text token's log-probability and the step's best alternatives, checked against a
// log-softmax computed here (in double) from Generator's own logits of the same greedy run.
TEST_F(Http, LogprobsMatchTheLogSoftmaxOfTheModelsLogits) {
  auto svc = serve(config());
  auto cli = client(*svc);
  GenerationOptions o;
  o.max_tokens = 10;
  std::vector<std::vector<double>> logsoftmax;
  o.on_logits = [&](std::span<const float> row) {
    double mx = row[0], sum = 0;
    for (float v : row) mx = std::max(mx, static_cast<double>(v));
    for (float v : row) sum += std::exp(v - mx);
    std::vector<double> ls;
    for (float v : row) ls.push_back(v - mx - std::log(sum));
    logsoftmax.push_back(std::move(ls));
  };
  const GenerationResult want = generate(expected_prompt("rank me"), o);
  json body = chat_body("rank me", 10);
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json content = json::parse(r->body)["choices"][0]["logprobs"]["content"];
  std::vector<json> streamed;
  body["stream"] = true;
  auto rs = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  bool done = false;
  for (const json& e : sse_events(rs->body, done))
    if (e["choices"][0].contains("logprobs"))
      for (const json& c : e["choices"][0]["logprobs"]["content"]) streamed.push_back(c);
  size_t k = 0;
  for (size_t i = 0; i < want.tokens.size(); ++i) {
    const int32_t t = want.tokens[i];
    if (t == reference_->config.eos_id || reference_->tokenizer->is_control(t)) continue;
    ASSERT_LT(k, content.size());
    const json& c = content[k++];
    EXPECT_NEAR(c["logprob"].get<double>(), logsoftmax[i][static_cast<size_t>(t)], 1e-4);
    ASSERT_EQ(c["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the best alternative; the rest follow in order.
    EXPECT_EQ(c["top_logprobs"][0]["logprob"], c["logprob"]);
    std::vector<double> sorted = logsoftmax[i];
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(c["top_logprobs"][j]["logprob"].get<double>(), sorted[j], 1e-4);
    ASSERT_LT(k - 1, streamed.size());
    EXPECT_EQ(streamed[k - 1], c) << "streamed the same";
  }
  EXPECT_EQ(k, content.size());
  EXPECT_EQ(streamed.size(), content.size());
  // The completions API's form: logprobs N, tokens and offsets into the text.
  json comp = {{"prompt", "Once"}, {"max_tokens", 5}, {"logprobs", 2}};
  r = cli.Post("/v1/completions", comp.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  const json& lp = c["logprobs"];
  std::string joined;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(lp["text_offset"][i], joined.size());
    joined += lp["tokens"][i].get<std::string>();
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
  }
  EXPECT_EQ(lp["tokens"].size(), lp["token_logprobs"].size());
}

// n > 1: that many choices generated side by side, choice i sampled with seed + i (each equal to
// Generator's with that seed), greedy ones equal; streamed chunks carry their choice's index; usage
// counts the prompt once and every choice's tokens.
TEST_F(Http, SeveralChoicesAreSampledWithTheirOwnSeeds) {
  auto svc = serve(config());
  auto cli = client(*svc);
  auto expected_with = [&](uint64_t seed) {
    GenerationOptions o;
    o.max_tokens = 12;
    o.sampling = {1.0f, 0, 1.0f, seed};
    return generate(expected_prompt("choose"), o);
  };
  json body = chat_body("choose", 12);
  body["n"] = 3;
  body["temperature"] = 1.0;
  body["seed"] = 40;
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  size_t tokens = 0;
  for (size_t i = 0; i < 3; ++i) {
    const json& c = j["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["token_ids"].get<std::vector<int32_t>>(), expected_with(40 + i).tokens) << "choice " << i;
    tokens += c["token_ids"].size();
  }
  EXPECT_NE(j["choices"][0]["token_ids"], j["choices"][1]["token_ids"]);
  EXPECT_EQ(j["usage"]["completion_tokens"], tokens);
  EXPECT_EQ(j["usage"]["prompt_tokens"], expected_prompt("choose").size());
  // Streamed: every choice's tokens under its index, one finish each, then [DONE].
  body["stream"] = true;
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  bool done = false;
  std::vector<std::vector<int32_t>> ids(3);
  std::vector<int> finishes(3, 0);
  for (const json& e : sse_events(r->body, done)) {
    const json& c = e["choices"][0];
    const size_t i = c["index"].get<size_t>();
    ASSERT_LT(i, 3u);
    if (c.contains("token_ids")) for (int32_t t : c["token_ids"]) ids[i].push_back(t);
    if (!c["finish_reason"].is_null()) ++finishes[i];
  }
  EXPECT_TRUE(done);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ids[i], j["choices"][i]["token_ids"].get<std::vector<int32_t>>()) << "choice " << i;
    EXPECT_EQ(finishes[i], 1);
  }
  // Greedy: the same answer n times.
  body = chat_body("choose", 12);
  body["n"] = 2;
  j = json::parse(cli.Post("/v1/chat/completions", body.dump(), "application/json")->body);
  EXPECT_EQ(j["choices"][0]["message"], j["choices"][1]["message"]);
}

TEST_F(Http, ConcurrentRequestsAreBatchedAndExact) {
  ServerConfig c = config();
  c.inference.batch_size = 4;
  auto svc = serve(c);
  const std::vector<std::string> users = {"first request", "the second one", "three", "and a fourth, longer, prompt"};
  std::vector<GenerationResult> want;
  for (size_t i = 0; i < users.size(); ++i) want.push_back(expected(users[i], 800 + 10 * static_cast<int>(i)));
  std::vector<std::future<std::pair<int, std::string>>> futs;
  for (size_t i = 0; i < users.size(); ++i)
    futs.push_back(std::async(std::launch::async, [&, i] {
      auto cli = client(*svc);
      auto r = cli.Post("/v1/chat/completions", chat_body(users[i], 800 + 10 * static_cast<int>(i), i % 2 == 1).dump(), "application/json");
      return r ? std::make_pair(r->status, r->body) : std::make_pair(-1, std::string());
    }));
  for (size_t i = 0; i < users.size(); ++i) {
    auto [status, body] = futs[i].get();
    ASSERT_EQ(status, 200) << body;
    std::vector<int32_t> ids;
    if (i % 2 == 1) {
      bool done = false;
      for (const json& e : sse_events(body, done))
        if (e["choices"][0].contains("token_ids")) for (int32_t t : e["choices"][0]["token_ids"]) ids.push_back(t);
    } else {
      ids = json::parse(body)["choices"][0]["token_ids"].get<std::vector<int32_t>>();
    }
    EXPECT_EQ(ids, want[i].tokens) << "request " << i;
  }
  auto m = client(*svc).Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_GE(metric(m->body, "folio_batch_size_max"), 2) << "the requests never shared a forward pass";
  EXPECT_LE(metric(m->body, "folio_batch_size_max"), 4);
}

TEST_F(Http, ApiKeysAreRequiredAndChecked) {
  ServerConfig c = config();
  fs::path keys = g_dir / "keys.txt";
  std::ofstream(keys) << "# keys\nsk-one\n\n  sk-two  \n";
  c.server.api_keys_file = keys.string();
  auto svc = serve(c);
  auto cli = client(*svc);
  auto r = cli.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "missing_api_key");
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "authentication_error");
  r = cli.Get("/v1/models", {{"Authorization", "Bearer sk-twO"}});
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  // llama-server's token routes are behind the same gate.
  r = cli.Post("/tokenize", R"({"content":"x"})", "application/json");
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(cli.Post("/tokenize", {{"Authorization", "Bearer sk-one"}}, R"({"content":"x"})", "application/json")->status, 200);
  r = cli.Post("/v1/chat/completions", {{"Authorization", "Bearer sk-on"}}, chat_body("x", 2).dump(), "application/json");
  EXPECT_EQ(r->status, 401);
  r = cli.Get("/v1/models", {{"Authorization", "Bearer sk-two"}});
  EXPECT_EQ(r->status, 200) << r->body;
  // The scheme is case-insensitive (RFC 7235); another scheme is no key at all.
  r = cli.Get("/v1/models", {{"Authorization", "bearer  sk-two"}});
  EXPECT_EQ(r->status, 200) << r->body;
  r = cli.Get("/v1/models", {{"Authorization", "Basic sk-two"}});
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "missing_api_key");
  r = cli.Post("/v1/chat/completions", {{"Authorization", "Bearer sk-one"}}, chat_body("x", 2).dump(), "application/json");
  EXPECT_EQ(r->status, 200) << r->body;
  // Probes stay open.
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
  EXPECT_EQ(cli.Get("/readyz")->status, 200);
  std::string text = cli.Get("/metrics")->body;
  EXPECT_EQ(metric(text, "folio_rejected_requests_total{reason=\"missing_api_key\"}"), 3);  // the /tokenize one included
  EXPECT_EQ(metric(text, "folio_rejected_requests_total{reason=\"invalid_api_key\"}"), 2);
}

TEST_F(Http, OversizedBodyGets413) {
  ServerConfig c = config();
  c.server.max_body_bytes = 2000;
  auto svc = serve(c);
  auto cli = client(*svc);
  auto r = cli.Post("/v1/chat/completions", chat_body(std::string(5000, 'a'), 2).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["code"], "body_too_large");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("server.max_body_bytes"), std::string::npos);
  r = cli.Post("/v1/chat/completions", chat_body("small", 2).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(metric(cli.Get("/metrics")->body, "folio_rejected_requests_total{reason=\"body_too_large\"}"), 1);
}

// X-Request-Id: a well-formed client id comes back; a missing or malformed one is replaced by ours
// (errors carry it too). Response ids are unique across two services, which never share a prefix.
TEST_F(Http, RequestIdsAreEchoedOrMadeAndResponseIdsDifferAcrossServices) {
  auto a = serve(config()), b = serve(config());
  auto ca = client(*a), cb = client(*b);
  auto r = ca.Post("/v1/chat/completions", {{"X-Request-Id", "trace-42.a:b"}}, chat_body("x", 2).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "trace-42.a:b");
  const std::string id_a = json::parse(r->body)["id"];
  r = ca.Get("/v1/models", {{"X-Request-Id", "bad id with spaces"}});
  EXPECT_EQ(r->get_header_value("X-Request-Id").rfind("req-", 0), 0u) << r->get_header_value("X-Request-Id");
  r = ca.Post("/v1/chat/completions", "{", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->get_header_value("X-Request-Id").rfind("req-", 0), 0u);
  r = cb.Post("/v1/chat/completions", chat_body("x", 2).dump(), "application/json");
  const std::string id_b = json::parse(r->body)["id"];
  EXPECT_EQ(id_a.rfind("chatcmpl-", 0), 0u) << id_a;
  EXPECT_NE(id_a.substr(0, id_a.rfind('-')), id_b.substr(0, id_b.rfind('-'))) << id_a << " " << id_b;
}

// One JSON access line per answered request, probes and rejections included, with the request's
// id, the key's id (never the key), tokens and timings; a stream's line comes when it ends.
TEST_F(Http, AccessLogHasOneJsonLinePerRequest) {
  ServerConfig c = config();
  const fs::path keys = g_dir / "access-keys.txt", log = g_dir / "access.log";
  std::ofstream(keys) << "sk-one\n";
  c.server.api_keys_file = keys.string();
  c.server.access_log = log.string();
  auto svc = serve(c);
  auto cli = client(*svc);
  const httplib::Headers auth = {{"Authorization", "Bearer sk-one"}};
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
  httplib::Headers traced = auth;
  traced.insert({"X-Request-Id", "trace-1"});
  auto r = cli.Post("/v1/chat/completions", traced, chat_body("hello", 3).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json usage = json::parse(r->body)["usage"];
  r = cli.Post("/v1/chat/completions", auth, chat_body("hello", 4, true).dump(), "application/json");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(cli.Get("/v1/models")->status, 401);
  EXPECT_EQ(cli.Get("/v1/nothing", auth)->status, 404);
  // The line is written after the answer's last byte: wait for all five.
  std::vector<json> lines;
  for (int tries = 0; tries < 100 && lines.size() < 5; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lines.clear();
    std::ifstream in(log);
    for (std::string l; std::getline(in, l);) {
      EXPECT_EQ(l.find("sk-one"), std::string::npos) << l;
      lines.push_back(json::parse(l));
    }
  }
  ASSERT_EQ(lines.size(), 5u);
  // Each request came on a connection of its own, so lines may come in another order: find them.
  auto line = [&](const std::function<bool(const json&)>& is) {
    for (const json& l : lines)
      if (is(l)) return l;
    ADD_FAILURE() << "no such line";
    return json::object();
  };
  for (const json& l : lines) EXPECT_EQ(l.size(), 14u) << l.dump();
  const json probe = line([](const json& l) { return l["path"] == "/healthz"; });
  EXPECT_EQ(probe["status"], 200);
  EXPECT_TRUE(probe["request_id"].is_null());
  const json chat = line([](const json& l) { return l["request_id"] == "trace-1"; });
  EXPECT_EQ(chat["method"], "POST");
  EXPECT_EQ(chat["path"], "/v1/chat/completions");
  EXPECT_EQ(chat["key_id"].get<std::string>().size(), 12u);
  EXPECT_EQ(chat["model"], "tiny");
  EXPECT_EQ(chat["prompt_tokens"], usage["prompt_tokens"]);
  EXPECT_EQ(chat["completion_tokens"], usage["completion_tokens"]);
  EXPECT_EQ(chat["cached_tokens"], usage["prompt_tokens_details"]["cached_tokens"]);
  EXPECT_GE(chat["queue_ms"].get<double>(), 0.0);
  EXPECT_GT(chat["ttft_ms"].get<double>(), 0.0);
  EXPECT_GE(chat["duration_ms"].get<double>(), chat["ttft_ms"].get<double>() - 0.1);
  EXPECT_EQ(chat["finish"], "length");
  const json stream = line([](const json& l) { return l["path"] == "/v1/chat/completions" && l["request_id"] != "trace-1"; });
  EXPECT_EQ(stream["completion_tokens"], 4);
  EXPECT_EQ(stream["finish"], "length");
  EXPECT_EQ(stream["key_id"], chat["key_id"]);
  EXPECT_EQ(stream["request_id"].get<std::string>().rfind("req-", 0), 0u);
  const json denied = line([](const json& l) { return l["status"] == 401; });
  EXPECT_EQ(denied["path"], "/v1/models");
  EXPECT_TRUE(denied["key_id"].is_null());
  EXPECT_TRUE(denied["completion_tokens"].is_null());
  EXPECT_EQ(line([](const json& l) { return l["path"] == "/v1/nothing"; })["status"], 404);
}

// model.served_names: every name is listed, retrievable and accepted in requests; answers report
// the first; another name is 404 naming the served ones.
TEST_F(Http, ServedNamesAreListedRetrievedAndAccepted) {
  ServerConfig c = config();
  c.model.served_names = "folio-tiny,gpt-4o-mini";
  auto svc = serve(c);
  auto cli = client(*svc);
  auto r = cli.Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  const json list = json::parse(r->body)["data"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["id"], "folio-tiny");
  EXPECT_EQ(list[1]["id"], "gpt-4o-mini");
  r = cli.Get("/v1/models/gpt-4o-mini");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["id"], "gpt-4o-mini");
  EXPECT_EQ(json::parse(r->body)["object"], "model");
  r = cli.Get("/v1/models/tiny");  // the directory's name is not served once names are given
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_not_found");
  EXPECT_NE(r->body.find("'folio-tiny', 'gpt-4o-mini'"), std::string::npos) << r->body;
  json body = chat_body("x", 2);
  body["model"] = "gpt-4o-mini";
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["model"], "folio-tiny");
  body["model"] = "tiny";
  EXPECT_EQ(cli.Post("/v1/chat/completions", body.dump(), "application/json")->status, 404);
  // Counted when the answer has been written, which the client may see first: poll briefly.
  double counted = -1;
  for (int tries = 0; tries < 50 && counted < 1; ++tries) {
    counted = metric(cli.Get("/metrics")->body, R"(folio_http_requests_total{path="/v1/models/{id}",status="200"})");
    if (counted < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(counted, 1.0);
}

// `stop`: the answer ends before the first stop string, streamed or not, with finish "stop"; the
// sequence stops soon after (fewer tokens than asked for); bad values are 400.
TEST_F(Http, StopStringsEndTheAnswerBeforeThem) {
  auto svc = serve(config("slow"));  // several ms per token: the cancel lands long before 60 tokens
  auto cli = client(*svc);
  json body = chat_body("stories", 60);
  body["model"] = "slow";
  body["ignore_eos"] = true;
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string full = json::parse(r->body)["choices"][0]["message"]["content"];
  ASSERT_GE(full.size(), 12u) << full;
  // A stop string taken from the middle of the free answer, and one that never occurs.
  const std::string stop = full.substr(full.size() / 2, 3);
  const std::string want = full.substr(0, full.find(stop));
  body["stop"] = json::array({"\x01never\x02", stop});
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], want);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 60);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200);
  bool done = false;
  const auto events = sse_events(r->body, done);
  EXPECT_TRUE(done);
  std::string streamed, finish;
  for (const json& e : events)
    for (const json& c : e["choices"]) {
      if (c["delta"].contains("content")) streamed += c["delta"]["content"].get<std::string>();
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(finish, "stop");
  ASSERT_TRUE(events.back().contains("usage"));
  EXPECT_LT(events.back()["usage"]["completion_tokens"].get<int>(), 60);
  // Bad values name the field; the server goes on.
  for (const json& bad : {json(""), json::array({"a", "b", "c", "d", "e"}), json(7), json::array({1})}) {
    body["stream"] = false;
    body["stop"] = bad;
    r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_EQ(r->status, 400) << bad.dump();
    EXPECT_NE(r->body.find("'stop'"), std::string::npos) << r->body;
  }
  body.erase("stop");
  EXPECT_EQ(cli.Post("/v1/chat/completions", body.dump(), "application/json")->status, 200);
}

// server.cors_origins: an allowed origin gets the CORS headers and its preflight a 204 without a
// key; another origin gets none; without the setting a preflight is 405 with Allow.
TEST_F(Http, CorsHeadersAndPreflightsFollowTheAllowedOrigins) {
  ServerConfig c = config();
  const fs::path keys = g_dir / "cors-keys.txt";
  std::ofstream(keys) << "sk-one\n";
  c.server.api_keys_file = keys.string();
  c.server.cors_origins = "https://app.example,https://other.example";
  auto svc = serve(c);
  auto cli = client(*svc);
  auto r = cli.Options("/v1/chat/completions", {{"Origin", "https://other.example"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://other.example");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Methods"), "POST");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  r = cli.Get("/v1/models", {{"Origin", "https://app.example"}, {"Authorization", "Bearer sk-one"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_NE(r->get_header_value("Access-Control-Expose-Headers").find("X-Request-Id"), std::string::npos);
  r = cli.Get("/v1/models", {{"Origin", "https://evil.example"}, {"Authorization", "Bearer sk-one"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  r = cli.Options("/v1/chat/completions", {{"Origin", "https://evil.example"}});
  EXPECT_NE(r->status, 204);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  // The preflight skipped the key; the request itself still needs it.
  r = cli.Get("/v1/models", {{"Origin", "https://app.example"}});
  EXPECT_EQ(r->status, 401);
  auto plain = serve(config());
  auto pc = client(*plain);
  r = pc.Options("/v1/chat/completions", {{"Origin", "https://app.example"}});
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

// server.auth_failures_per_minute: an address that keeps failing authentication gets 429 with
// Retry-After after its burst; a valid key from the same address is never held back.
TEST_F(Http, FailedAuthenticationsAreThrottledPerAddress) {
  ServerConfig c = config();
  const fs::path keys = g_dir / "throttle-keys.txt";
  std::ofstream(keys) << "sk-one\n";
  c.server.api_keys_file = keys.string();
  c.server.auth_failures_per_minute = 3;
  auto svc = serve(c);
  auto cli = client(*svc);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cli.Get("/v1/models", {{"Authorization", "Bearer guess-" + std::to_string(i)}})->status, 401);
  auto r = cli.Get("/v1/models", {{"Authorization", "Bearer guess-3"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_failed_authentications");
  EXPECT_GE(std::stoi(r->get_header_value("Retry-After")), 1);
  EXPECT_EQ(cli.Get("/v1/models")->status, 429);  // no key at all counts too
  EXPECT_EQ(cli.Get("/v1/models", {{"Authorization", "Bearer sk-one"}})->status, 200);
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
}

TEST_F(Http, RateLimitGives429WithRetryAfter) {
  ServerConfig c = config();
  c.server.rate_limit = 2;  // per minute: a burst of 2, then one every 30 s
  auto svc = serve(c);
  auto cli = client(*svc);
  EXPECT_EQ(cli.Get("/v1/models")->status, 200);
  EXPECT_EQ(cli.Post("/v1/chat/completions", chat_body("a", 2).dump(), "application/json")->status, 200);
  auto r = cli.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "30");
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "rate_limit_error");
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("rate limit of 2 requests per minute"),
            std::string::npos) << r->body;
  EXPECT_EQ(cli.Get("/healthz")->status, 200);  // probes are not limited
}

TEST_F(Http, MalformedRequestsGet4xxAndTheServerGoesOn) {
  auto svc = serve(config());
  auto cli = client(*svc);
  struct Case {
    std::string body;
    int status;
    std::string code, message_part;
  };
  const std::vector<Case> cases = {
      {"{not json", 400, "invalid_json", "not valid JSON"},
      {"[1,2]", 400, "invalid_json", "JSON object"},
      {R"({"model":"tiny"})", 400, "missing_field", "'messages' is required"},
      {R"({"messages":"hi"})", 400, "invalid_value", "'messages'"},
      {R"({"messages":[{"role":"robot","content":"x"}]})", 400, "invalid_value", "messages[0].role"},
      {R"({"messages":[{"role":"user","content":5}]})", 400, "invalid_type", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-3})", 400, "invalid_value", "'max_tokens' must be at least 1"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"many"})", 400, "invalid_type", "'max_tokens' must be an integer"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":100000})", 400, "invalid_value", "inference.max_output_length"},
      {R"({"messages":[{"role":"user","content":"x"}],"temperature":7})", 400, "invalid_value", "'temperature'"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_p":0})", 400, "invalid_value", "'top_p'"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":17})", 400, "invalid_value", "'n' must be between 1 and 16"},
      {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", 400, "invalid_type", "'stream'"},
      {R"({"model":"gpt-9","messages":[{"role":"user","content":"x"}]})", 404, "model_not_found", "gpt-9"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]})", 400,
       "unsupported_file_type", "not a PDF, PNG or JPEG"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,A"}}]}]})", 400,
       "invalid_base64", "whole number of bytes"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.org/a.png"}}]}]})", 400,
       "invalid_image_url", "does not fetch URLs"},
  };
  for (const Case& k : cases) {
    auto r = cli.Post("/v1/chat/completions", k.body, "application/json");
    ASSERT_TRUE(r) << k.body;
    EXPECT_EQ(r->status, k.status) << k.body << " -> " << r->body;
    json e = json::parse(r->body);
    EXPECT_EQ(e["error"]["code"], k.code) << k.body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_NE(e["error"]["message"].get<std::string>().find(k.message_part), std::string::npos) << e.dump();
    // The next good request is served.
    auto ok = cli.Post("/v1/chat/completions", chat_body("still here", 3).dump(), "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
  auto r = cli.Get("/v1/nothing");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "not_found");
  // A real route with the wrong method: 405 with the methods it takes, in OpenAI's error shape.
  r = cli.Get("/v1/chat/completions");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "method_not_allowed");
  r = cli.Post("/v1/models", "{}", "application/json");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET");
  r = cli.Delete("/metrics");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(cli.Get("/v1/models")->status, 200);  // and the server goes on
}

TEST_F(Http, MetricsCountWhatHappened) {
  auto svc = serve(config());
  auto cli = client(*svc);
  int64_t prompt = 0, completion = 0;
  for (int n : {5, 7}) {
    auto r = cli.Post("/v1/chat/completions", chat_body("count " + std::to_string(n), n).dump(), "application/json");
    ASSERT_EQ(r->status, 200);
    json u = json::parse(r->body)["usage"];
    prompt += u["prompt_tokens"].get<int64_t>();
    completion += u["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(cli.Post("/v1/chat/completions", "{", "application/json")->status, 400);
  // Requests are counted once their response is written, which can lag the client's read a little.
  wait_metric(*svc, "folio_http_requests_total{path=\"/v1/chat/completions\",status=\"200\"}", 2);
  std::string text = wait_metric(*svc, "folio_http_requests_total{path=\"/v1/chat/completions\",status=\"400\"}", 1);
  EXPECT_EQ(metric(text, "folio_http_requests_total{path=\"/v1/chat/completions\",status=\"200\"}"), 2) << text;
  EXPECT_EQ(metric(text, "folio_http_requests_total{path=\"/v1/chat/completions\",status=\"400\"}"), 1);
  EXPECT_EQ(metric(text, "folio_rejected_requests_total{reason=\"invalid_json\"}"), 1);
  EXPECT_EQ(metric(text, "folio_prompt_tokens_total"), prompt);
  EXPECT_EQ(metric(text, "folio_generation_tokens_total"), completion);
  EXPECT_EQ(metric(text, "folio_time_to_first_token_seconds_count"), 2);
  EXPECT_EQ(metric(text, "folio_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), 2);
  // Bucket bounds print as written (0.005), not with %.17g's float noise.
  EXPECT_NE(text.find("folio_time_to_first_token_seconds_bucket{le=\"0.005\"}"), std::string::npos) << text;
  EXPECT_EQ(text.find("00000000001\""), std::string::npos) << text;
  EXPECT_EQ(metric(text, "folio_time_per_output_token_seconds_count"), 2);
  EXPECT_EQ(metric(text, "folio_running_sequences"), 0);
  EXPECT_EQ(metric(text, "folio_queued_sequences"), 0);
  EXPECT_EQ(metric(text, "folio_kv_bytes{tier=\"ram\"}"), 0);
  EXPECT_GT(metric(text, "folio_kv_peak_bytes"), 0);
  EXPECT_EQ(metric(text, "folio_kv_capacity_bytes"), static_cast<double>(svc->config().inference.kv_budget_bytes));
  EXPECT_EQ(metric(text, "folio_ready"), 1);
  EXPECT_NE(text.find("# TYPE folio_time_to_first_token_seconds histogram"), std::string::npos);
}

// Prometheus's own linter accepts /metrics after traffic of every kind (answers, errors, a
// stream), and histogram bounds print as written (le="0.005", not float noise).
TEST_F(Http, PromtoolAcceptsTheMetrics) {
  auto svc = serve(config());
  auto cli = client(*svc);
  cli.Post("/v1/chat/completions", chat_body("lint", 4).dump(), "application/json");
  cli.Post("/v1/chat/completions", chat_body("lint", 4, true).dump(), "application/json");
  cli.Post("/v1/chat/completions", "{", "application/json");
  cli.Get("/nowhere");
  const std::string text = cli.Get("/metrics")->body;
  const fs::path file = g_dir / "metrics.txt";
  std::ofstream(file) << text;
  ASSERT_EQ(std::system("command -v promtool > /dev/null"), 0) << "promtool (Debian's prometheus) is installed by scripts/install-deps.sh";
  const fs::path report = g_dir / "promtool.txt";
  const int rc = std::system(("promtool check metrics < " + file.string() + " > " + report.string() + " 2>&1").c_str());
  std::ifstream in(report);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << said;
  EXPECT_EQ(said, "") << said;
  size_t buckets = 0;
  for (size_t p = text.find("le=\""); p != std::string::npos; p = text.find("le=\"", p + 1), ++buckets) {
    const std::string le = text.substr(p + 4, text.find('"', p + 4) - p - 4);
    EXPECT_LE(le.size(), 6u) << le;
  }
  EXPECT_GT(buckets, 10u);
  // And promtool does complain about a bad exposition, so the check above can fail.
  std::ofstream(file) << "# TYPE folio_bad counter\nfolio_bad 1\n";
  EXPECT_NE(std::system(("promtool check metrics < " + file.string() + " > /dev/null 2>&1").c_str()), 0);
}

TEST_F(Http, ReadinessFollowsLoading) {
  auto svc = std::make_unique<Service>(config());
  svc->bind();
  svc->start();
  auto cli = client(*svc);
  auto r = cli.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("loading"), std::string::npos);
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
  r = cli.Post("/v1/chat/completions", chat_body("early", 2).dump(), "application/json");
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_loading");
  svc->load();
  EXPECT_EQ(cli.Get("/readyz")->status, 200);
  EXPECT_EQ(cli.Post("/v1/chat/completions", chat_body("late", 2).dump(), "application/json")->status, 200);
}

// A streaming request on a raw socket, read until `events` data events arrived; returns the socket.
int open_stream(int port, const std::string& body, int events, std::string* received = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  if (send(fd, req.data(), req.size(), 0) != static_cast<ssize_t>(req.size())) return -1;
  std::string got;
  char buf[4096];
  size_t seen = 0;
  while (seen < static_cast<size_t>(events)) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    got.append(buf, static_cast<size_t>(n));
    seen = 0;
    for (size_t p = got.find("data: "); p != std::string::npos; p = got.find("data: ", p + 1)) ++seen;
  }
  if (received) *received = got;
  return fd;
}

TEST_F(Http, ClientDisconnectCancelsAndFreesKV) {
  auto svc = serve(config("slow"));
  json body = chat_body("a long story", 3000, true);
  body["model"] = "slow";
  body["ignore_eos"] = true;
  int fd = open_stream(svc->port(), body.dump(), 4);
  ASSERT_GE(fd, 0);
  auto m = client(*svc).Get("/metrics");
  EXPECT_EQ(metric(m->body, "folio_running_sequences"), 1);
  EXPECT_GT(metric(m->body, "folio_kv_bytes{tier=\"ram\"}"), 0);
  close(fd);
  std::string text = wait_metric(*svc, "folio_kv_bytes{tier=\"ram\"}", 0);
  EXPECT_EQ(metric(text, "folio_kv_bytes{tier=\"ram\"}"), 0);
  EXPECT_EQ(metric(text, "folio_running_sequences"), 0);
  EXPECT_EQ(metric(text, "folio_client_disconnects_total"), 1);
  text = wait_metric(*svc, "folio_generations_total{reason=\"cancelled\"}", 1);
  EXPECT_EQ(metric(text, "folio_generations_total{reason=\"cancelled\"}"), 1);
  EXPECT_LT(metric(text, "folio_generation_tokens_total"), 3000);
}

TEST_F(Http, FullQueueGives503WithRetryAfter) {
  ServerConfig c = config("slow");
  c.inference.batch_size = 1;
  c.inference.max_queued_requests = 1;
  auto svc = serve(c);
  json long_body = chat_body("hold the batch", 3000, true);
  long_body["model"] = "slow";
  long_body["ignore_eos"] = true;
  std::string first;
  int fd = open_stream(svc->port(), long_body.dump(), 2, &first);  // running
  ASSERT_GE(fd, 0);
  SCOPED_TRACE("the long request began with: " + first);
  json small = chat_body("wait in line", 2);
  small["model"] = "slow";
  auto queued = std::async(std::launch::async, [&] {
    auto r = client(*svc).Post("/v1/chat/completions", small.dump(), "application/json");
    return r ? std::to_string(r->status) + " " + r->body : std::string("no response");
  });
  ASSERT_EQ(metric(wait_metric(*svc, "folio_queued_sequences", 1), "folio_queued_sequences"), 1);
  auto cli = client(*svc);
  json third = small;
  third["messages"][0]["content"] = "no room for me in the line";
  auto r = cli.Post("/v1/chat/completions", third.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "queue_full");
  EXPECT_EQ(cli.Get("/readyz")->status, 503);  // no capacity left
  EXPECT_EQ(metric(cli.Get("/metrics")->body, "folio_rejected_requests_total{reason=\"queue_full\"}"), 1);
  close(fd);  // frees the batch: the queued request runs
  const std::string queued_reply = queued.get();
  EXPECT_EQ(queued_reply.substr(0, 4), "200 ") << queued_reply;
  EXPECT_EQ(cli.Get("/readyz")->status, 200);
}

TEST_F(Http, ShutdownDrainsInFlightRequests) {
  auto svc = serve(config("slow"));
  json body = chat_body("finish me", 150);
  body["model"] = "slow";
  body["ignore_eos"] = true;  // a fixed length, so the request is surely still running below
  auto inflight = std::async(std::launch::async, [&] {
    auto r = client(*svc).Post("/v1/chat/completions", body.dump(), "application/json");
    return r ? std::make_pair(r->status, r->body) : std::make_pair(-1, std::string());
  });
  std::string text = wait_metric(*svc, "folio_running_sequences", 1);
  ASSERT_EQ(metric(text, "folio_running_sequences"), 1);
  std::thread stopper([&] { svc->shutdown(std::chrono::seconds(60)); });
  while (svc->ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Draining: new work is refused, the request in flight goes on.
  auto r = client(*svc).Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "shutting_down");
  auto [status, out] = inflight.get();
  stopper.join();
  svc->wait();
  EXPECT_EQ(status, 200) << out;
  EXPECT_EQ(json::parse(out)["usage"]["completion_tokens"], 150);
  EXPECT_EQ(json::parse(out)["choices"][0]["finish_reason"], "length");
}

// llama-server's /tokenize and /detokenize: the served tokenizer's ids and back; bad bodies get a
// 400 naming the field, and the server goes on.
TEST_F(Http, TokenizeAndDetokenize) {
  auto svc = serve(config());
  auto cli = client(*svc);
  const Tokenizer& tok = *reference_->tokenizer;
  const std::vector<int32_t> ids = tok.encode("hello world");
  auto r = cli.Post("/tokenize", R"({"content":"hello world"})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["tokens"].get<std::vector<int32_t>>(), ids);
  r = cli.Post("/tokenize", R"({"content":"hello world","add_special":true,"with_pieces":true})", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json pieces = json::parse(r->body)["tokens"];
  ASSERT_EQ(pieces.size(), ids.size() + 1);
  EXPECT_EQ(pieces[0]["id"], reference_->config.bos_id);
  EXPECT_EQ(pieces[1]["id"], ids[0]);
  EXPECT_EQ(pieces[1]["piece"], tok.token_bytes(ids[0]));
  r = cli.Post("/detokenize", json{{"tokens", ids}}.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["content"], tok.decode(ids));

  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"/tokenize", "{}", "missing_field"},
      {"/tokenize", R"({"content":5})", "invalid_type"},
      {"/tokenize", R"({"content":"x","add_special":"yes"})", "invalid_type"},
      {"/detokenize", R"({"tokens":"1 2"})", "invalid_type"},
      {"/detokenize", R"({"tokens":[1,"a"]})", "invalid_type"},
      {"/detokenize", R"({"tokens":[1,99999999]})", "invalid_value"},
      {"/detokenize", "not json", "invalid_json"},
  };
  for (const auto& [path, body, code] : bad) {
    r = cli.Post(path, body, "application/json");
    ASSERT_TRUE(r) << path << " " << body;
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], code) << body << " -> " << r->body;
  }
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
}

}  // namespace
}  // namespace folio
