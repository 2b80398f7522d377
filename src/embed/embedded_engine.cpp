#include "embed/embedded_engine.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "model/decoder.h"
#include "runtime/ocr_model.h"
#include "runtime/ocr_pages.h"
#include "runtime/scheduler.h"
#include "server/api_error.h"
#include "server/serving_engine.h"
#include "text/tokenizer.h"

namespace folio {

namespace {

struct OptionKey {
  const char* name;        // as the caller spells it: folio ocr's option, '_' for '-'
  const char* config_key;  // the server config key it sets (docs/server.md)
};

// folio ocr's KV, policy and thread options, then what a long-lived engine adds.
constexpr OptionKey kOptions[] = {
    {"mmproj", "model.mmproj"},
    {"weights", "model.weights"},
    {"encoder_precision", "model.encoder_precision"},
    {"prefill_precision", "model.prefill_precision"},
    {"policy", "attention.type"},
    {"window", "attention.decode_window_size"},
    {"sparse_top_k", "attention.sparse_top_k"},
    {"sparse_unit", "attention.sparse_unit_tokens"},
    {"sparse_focus_pages", "attention.sparse_focus_pages"},
    {"sparse_neighbours", "attention.sparse_neighbour_pages"},
    {"resident_pages", "attention.resident_pages"},
    {"kv_keep", "attention.kv_keep"},
    {"kv_observe", "attention.kv_observe"},
    {"kv_dtype", "inference.kv_dtype"},
    {"kv_dtype_k", "inference.kv_dtype_k"},
    {"kv_dtype_v", "inference.kv_dtype_v"},
    {"kv_dtype_window", "inference.kv_dtype_window"},
    {"kv_rotate", "inference.kv_rotate"},
    {"kv_budget", "inference.kv_budget_bytes"},
    {"kv_offload", "inference.kv_offload_dir"},
    {"kv_hot_bytes", "inference.kv_hot_bytes"},
    {"kv_cold_bytes", "inference.kv_cold_bytes"},
    {"prefix_cache_bytes", "inference.prefix_cache_bytes"},
    {"threads", "inference.threads"},
    {"max_tokens", "inference.max_output_length"},
    {"batch_size", "inference.batch_size"},
    {"max_queued", "inference.max_queued_requests"},
    {"prefill_chunk", "inference.prefill_chunk"},
    {"batch_invariant", "inference.batch_invariant"},
    {"reference_cache_bytes", "inference.reference_cache_bytes"},
    {"redis", "remote.redis"},
    {"max_pages", "server.max_pages"},
    {"timeout", "server.request_timeout_s"},
};

// What differs from `folio serve`'s defaults: a program reading its own documents has no page or
// output limit to protect other clients from, and no deadline.
const std::map<std::string, std::string> kEmbeddedDefaults = {
    {"inference.max_output_length", "1000000"},
    {"server.max_pages", "1000000"},
    {"server.request_timeout_s", "31536000"},
};

// `message` with every config key replaced by the option it came from.
std::string in_option_words(std::string message) {
  for (const OptionKey& o : kOptions) {
    for (const std::string& from : {std::string("--") + o.config_key, std::string(o.config_key)}) {
      for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + 1)) {
        const size_t end = at + from.size();
        const bool whole = end == message.size() || !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_');
        if (whole) message.replace(at, from.size(), o.name);
      }
    }
  }
  return message;
}

ServerConfig embedded_config(const std::string& model, const std::map<std::string, std::string>& options) {
  ConfigSources src;
  src.flags = kEmbeddedDefaults;
  if (!model.empty()) src.flags["model.path"] = model;
  for (const auto& [name, value] : options) {
    const OptionKey* found = nullptr;
    for (const OptionKey& o : kOptions)
      if (name == o.name) found = &o;
    if (!found) {
      std::string names;
      for (const OptionKey& o : kOptions) names += (names.empty() ? "" : ", ") + std::string(o.name);
      throw_invalid("unknown option '" + name + "' (options: " + names + ")");
    }
    src.flags[found->config_key] = value;
  }
  return load_server_config(src);
}

std::string model_name(const ServerConfig& cfg) {
  std::string path = resolved_model_path(cfg);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::filesystem::path(path).filename().string();
}

}  // namespace

// A generation's tokens and result, from the scheduler thread to the one polling the run.
struct TextRun::Channel {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::optional<SequenceResult> result;
};

TextRun::~TextRun() {
  if (!done_ && engine_) engine_->scheduler().cancel(id_);
}

std::string TextRun::poll(std::chrono::milliseconds wait) {
  std::vector<int32_t> fresh;
  bool ended = false;
  {
    std::unique_lock lk(ch_->mu);
    ch_->cv.wait_for(lk, wait, [&] { return ch_->tokens.size() > taken_ || ch_->result; });
    fresh.assign(ch_->tokens.begin() + static_cast<std::ptrdiff_t>(taken_), ch_->tokens.end());
    taken_ = ch_->tokens.size();
    ended = ch_->result.has_value();
  }
  std::string text;
  const ModelConfig& mc = engine_->decoder().config();
  for (int32_t t : fresh)
    if (t != mc.eos_id && !engine_->tokenizer().is_control(t)) text += detok_->push(t);
  if (ended) {
    text += detok_->flush();
    done_ = true;
  }
  return text;
}

const SequenceResult& TextRun::result() const {
  if (!done_) throw Error(Error::Kind::Internal, "TextRun::result before the run is done");
  const SequenceResult& r = *ch_->result;
  if (auto e = generation_error(r, timeout_s_)) throw *e;
  return r;
}

std::string TextRun::finish_reason() const { return std::string(result().stop_reason.name()); }

EmbeddedEngine::EmbeddedEngine(const std::string& model, const std::map<std::string, std::string>& options) {
  try {
    const ServerConfig cfg = embedded_config(model, options);
    model_id_ = model_name(cfg);
    limits_.max_pages = static_cast<size_t>(cfg.server.max_pages);
    limits_.max_output_length = cfg.inference.max_output_length;
    limits_.max_reference_length = cfg.model.max_reference_length;
    limits_.timeout_s = cfg.server.request_timeout_s;
    engine_ = std::make_unique<ServingEngine>(cfg);
    engine_->load();
  } catch (const Error& e) {
    throw Error(e.kind(), in_option_words(e.what()));
  }
}

EmbeddedEngine::~EmbeddedEngine() = default;

const std::vector<std::pair<std::string, std::string>>& EmbeddedEngine::option_names() {
  static const std::vector<std::pair<std::string, std::string>> names = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const OptionKey& o : kOptions) out.emplace_back(o.name, server_config_help(o.config_key));
    return out;
  }();
  return names;
}

std::vector<UploadedFile> EmbeddedEngine::read_input(const std::string& path) {
  std::vector<UploadedFile> out;
  for (const std::string& file : expand_ocr_input(path)) out.push_back(read_file(file));
  return out;
}

UploadedFile EmbeddedEngine::read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw_invalid("input '" + path + "' does not exist");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(Error::Kind::Io, "cannot read '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error(Error::Kind::Io, "cannot read '" + path + "'");
  return UploadedFile{path, sniff_file_type(bytes), std::move(bytes)};
}

std::unique_ptr<OcrJob> EmbeddedEngine::start_ocr(std::vector<UploadedFile> files, const std::string& pages,
                                                  std::optional<int64_t> max_tokens) {
  for (UploadedFile& f : files) f.type = check_file_type(f.bytes, "", "'" + f.name + "'");
  return engine_->start_ocr_job(std::move(files), pages, max_tokens, limits_, model_id_);
}

std::unique_ptr<TextRun> EmbeddedEngine::start_text(const std::string& prompt, const TextOptions& opt) {
  const ModelConfig& mc = engine_->decoder().config();
  std::vector<int32_t> ids;
  if (opt.add_bos && mc.bos_id >= 0) ids.push_back(mc.bos_id);
  const std::vector<int32_t> text = engine_->tokenizer().encode(prompt);
  ids.insert(ids.end(), text.begin(), text.end());
  int64_t limit = 0;
  try {
    limit = engine_->output_limit(static_cast<int64_t>(ids.size()), opt.max_tokens);
  } catch (const ApiError& e) {
    throw ApiError(e.status, e.type, e.code, in_option_words(e.what()));  // the engine's limits are options here
  }
  std::unique_ptr<TextRun> run(new TextRun());
  run->ch_ = std::make_shared<TextRun::Channel>();
  run->detok_ = std::make_unique<StreamingDetokenizer>(engine_->tokenizer());
  run->engine_ = engine_.get();
  run->timeout_s_ = limits_.timeout_s;
  SequenceRequest sr;
  sr.prompt = std::move(ids);
  sr.max_tokens = opt.max_tokens.value_or(limit);
  sr.sampling = {opt.temperature, 0, opt.top_p, opt.seed};
  sr.deadline = deadline_after(limits_.timeout_s);
  sr.on_token = [ch = run->ch_](int32_t t) {
    std::lock_guard lk(ch->mu);
    ch->tokens.push_back(t);
    ch->cv.notify_all();
  };
  sr.on_done = [ch = run->ch_](const SequenceResult& r) {
    std::lock_guard lk(ch->mu);
    ch->result = r;
    ch->cv.notify_all();
  };
  const Submission sub = engine_->scheduler().submit(std::move(sr));
  if (auto e = rejection_error(sub)) throw *e;
  run->id_ = sub.id;
  return run;
}

bool EmbeddedEngine::reads_documents() const { return engine_->ocr_model() != nullptr; }

SchedulerStats EmbeddedEngine::stats() const { return engine_->scheduler().stats(); }

}  // namespace folio
