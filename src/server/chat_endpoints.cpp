// POST /v1/chat/completions and /v1/completions: documents and images to the OCR model, text to the
// scheduler; answered whole or as server-sent events, n choices, logprobs, stop strings.
#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/service.h"
#include "server/service_io.h"
#include "server/serving_engine.h"
#include "server/stop_strings.h"

namespace folio {

using nlohmann::json;

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
    if (engine_->decoder().config().bos_id >= 0) prompt.push_back(engine_->decoder().config().bos_id);
    const std::vector<int32_t> ids = engine_->tokenizer().encode(q.prompt);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  const int32_t vocab = engine_->tokenizer().vocab_size();
  for (int32_t id : prompt)
    if (id >= vocab) throw bad_request("invalid_value", "'prompt' holds token id " + std::to_string(id) + ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
  AnswerIds ids{ids_.next("cmpl"), unix_now(), true, ""};
  if (q.echo && !q.prompt.empty()) ids.echo = q.prompt;
  if (q.echo && q.prompt.empty()) {
    std::vector<int32_t> text_ids;
    for (int32_t t : prompt)
      if (is_text(t)) text_ids.push_back(t);
    ids.echo = engine_->tokenizer().decode(text_ids);
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
  if (engine_->decoder().config().bos_id >= 0) prompt.push_back(engine_->decoder().config().bos_id);
  const std::vector<int32_t> ids = engine_->tokenizer().encode(chat_prompt_text(cr.messages));
  prompt.insert(prompt.end(), ids.begin(), ids.end());
  return text_sequence(std::move(prompt), cr, std::move(ch));
}

SequenceRequest Service::text_sequence(std::vector<int32_t> prompt, const ChatRequest& cr, std::shared_ptr<ChatChannel> ch) {
  const int64_t limit = engine_->output_limit(static_cast<int64_t>(prompt.size()), cr.max_tokens);
  SequenceRequest sr;
  sr.prompt = std::move(prompt);
  sr.max_tokens = cr.max_tokens.value_or(limit);
  sr.sampling = {cr.temperature, 0, cr.top_p, cr.seed};
  sr.stop_at_eos = !cr.ignore_eos;
  sr.deadline = deadline_after(cfg_.server.request_timeout_s);
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
  const Submission sub = engine_->scheduler().submit(std::move(sr));
  if (auto e = rejection_error(sub)) throw *e;
  return sub.id;
}

bool Service::is_text(int32_t token) const {
  return token != engine_->decoder().config().eos_id && !engine_->tokenizer().is_control(token);
}

json Service::logprobs_json(std::span<const TokenLogprob> ts, const AnswerIds& ids, size_t offset) const {
  std::vector<TokenLogprob> text;  // EOS and control tokens are not in the text, so not here either
  for (const TokenLogprob& t : ts)
    if (is_text(t.token)) text.push_back(t);
  if (ids.text_completion) return completion_logprobs_json(text, engine_->tokenizer(), offset);
  json content = json::array();
  for (const TokenLogprob& t : text) content.push_back(chat_logprob_json(t, engine_->tokenizer()));
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
      for (const Choice& c : out) engine_->scheduler().cancel(c.rid);
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
  StreamingDetokenizer detok(engine_->tokenizer());
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
        engine_->scheduler().cancel(c.rid);
        metrics_.count_cancelled_by_client();
        lk.lock();
      }
      for (; match && !stops.stopped() && ch.taken < ch.tokens.size(); ++ch.taken)
        if (is_text(ch.tokens[ch.taken])) stopped_text += stops.push(detok.push(ch.tokens[ch.taken]));
      if (ch.result) break;
      if (stops.stopped()) {  // once: the wait above now waits for the cancelled result only
        lk.unlock();
        engine_->scheduler().cancel(c.rid);
        lk.lock();
      }
    }
    r = *ch.result;
    if (cancelled) {
      note_result(r);
      current_access().finish = "client_closed";
      return std::nullopt;  // nobody to answer
    }
  }
  std::string text;
  if (stops.empty()) {
    // EOS and other control tokens are not text (the streaming path skips them the same way).
    std::vector<int32_t> text_ids;
    for (int32_t t : r.tokens)
      if (is_text(t)) text_ids.push_back(t);
    text = engine_->tokenizer().decode(text_ids);
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
    for (; k < choices.size(); ++k) engine_->scheduler().cancel(choices[k].rid);
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
  current_access().completion_tokens = completion;
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
  auto st = std::make_shared<ChatStreamState>(cr, ids, std::move(choices), model_id_, engine_->tokenizer());
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [this, st](size_t, DataSink& sink) { return chat_stream_step(*st, sink); },
      [this, st](bool) {
        bool cut = false;
        for (const ChatStreamState::One& c : st->choices)
          if (!c.finished) engine_->scheduler().cancel(c.rid), cut = true;  // the client went away (or the server is stopping)
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
    current_access().completion_tokens = st.completion;
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
  if (c.stops.stopped() && !was_stopped && !result) engine_->scheduler().cancel(c.rid);
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
