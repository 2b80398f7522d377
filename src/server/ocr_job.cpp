#include "server/ocr_job.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <span>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "doc/ocr_json.h"
#include "doc/ocr_markdown.h"
#include "doc/image_write.h"
#include "doc/resize.h"
#include "runtime/ocr_pipeline.h"
#include "server/base64.h"
#include "core/content_hash.h"
#include "runtime/ocr_figure_files.h"
#include "runtime/ocr_pass_reader.h"
#include "runtime/ocr_sequence.h"
#include "server/remote_pass.h"
#include "server/remote_prefix.h"
#include "text/tokenizer.h"

namespace folio {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A file name safe to create: the client's base name with anything unusual replaced.
std::string safe_name(const std::string& name) {
  std::string base = name.substr(name.find_last_of("/\\") == std::string::npos ? 0 : name.find_last_of("/\\") + 1);
  std::string out;
  for (char c : base.substr(0, 100)) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "file";
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
}

std::string png_data_uri(const RgbImage& image) { return "data:image/png;base64," + encode_base64(encode_png(image)); }

std::string unique_dir() {
  static std::atomic<uint64_t> counter{0};
  return (fs::temp_directory_path() / ("folio-upload-" + std::to_string(getpid()) + "-" + std::to_string(++counter))).string();
}

}  // namespace

// Filled by the scheduler thread's callbacks, read by the job's HTTP thread.
struct OcrJob::Shared {
  std::mutex mu;
  std::condition_variable cv;
  struct Slot {
    std::vector<int32_t> tokens;
    size_t taken = 0;
    std::optional<SequenceResult> result;
  };
  std::vector<Slot> slots;  // one per pass; sized before any submission
};

struct OcrJob::Pass {
  size_t first = 0, count = 0;
  RequestId id = -1;
  int64_t cached_rows = 0;
  bool local_hit = false;  // its prepared pass came from this replica's cache (its KV likely too)
  std::optional<OcrPassReader> reader;  // set once submitted
  std::optional<SequenceResult> result;
  bool ended() const { return reader && reader->ended(); }
};

namespace {

// The uploads on disk, under names that errors can be mapped back from.
struct StagedUploads {
  std::vector<std::string> paths;
  std::map<std::string, std::string> client_name;  // temporary path -> the client's name
  std::map<std::string, std::string> digest;       // temporary path -> SHA-256 of its bytes

  // A document error as the client sees it: 400 invalid_document naming its files, not ours.
  ApiError invalid_document(const Error& e) const {
    std::string msg = e.what();
    for (const auto& [path, name] : client_name) replace_all(msg, path, name);
    return bad_request("invalid_document", msg);
  }
};

// Writes every file into dir/<i>/<safe name>, releasing its bytes in memory.
StagedUploads stage_uploads(const std::string& dir, std::vector<UploadedFile>& files) {
  StagedUploads u;
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      const fs::path sub = fs::path(dir) / std::to_string(i);
      fs::create_directories(sub);
      const std::string path = (sub / safe_name(files[i].name)).string();
      std::ofstream f(path, std::ios::binary);
      f.write(files[i].bytes.data(), static_cast<std::streamsize>(files[i].bytes.size()));
      if (!f) throw Error(Error::Kind::Io, "cannot write the upload to " + path);
      u.paths.push_back(path);
      u.client_name[path] = files[i].name;
      u.digest[path] = sha256_hex(files[i].bytes);
      files[i].bytes = std::string();  // the copy on disk is the one used now
    }
  } catch (const fs::filesystem_error& e) {
    throw ApiError(500, "server_error", "internal_error", std::string("cannot store the upload: ") + e.what());
  }
  return u;
}

// The reference cache's key of a pass: the model, how pages are read and laid out, and the bytes and
// page numbers of its pages.
std::string pass_key(const OcrEngine& engine, const OcrPages& pages, size_t first, size_t count, const StagedUploads& u) {
  const OcrModel& model = *engine.model;
  const KVPolicy& policy = engine.scheduler->options().policy;
  Sha256 h;
  h.field(engine.model_id).field(model.name()).field("base").field(std::to_string(model.pdf_dpi()));
  // A rolling pass is laid out differently: the resident pages in the reference, the rest later.
  h.field(policy.rolls() ? "rolling " + std::to_string(policy.resident_pages) : "whole");
  for (size_t i = first; i < first + count; ++i) h.field(u.digest.at(pages.page(i).file)).field(std::to_string(pages.page(i).index));
  return h.hex();
}

// The pass of pages first..first+count-1 as the model lays it out (most models encode its pages
// lazily, when produce_pass asks). Under the encoder lock: a model may encode here.
std::shared_ptr<CachedPass> lay_out_pass(const OcrEngine& engine, const OcrPages& pages, size_t first, size_t count) {
  OcrModel& model = *engine.model;
  const KVPolicy& policy = engine.scheduler->options().policy;
  auto fresh = std::make_shared<CachedPass>();
  fresh->pass = prepare_ocr_pass(model, pages, first, count, policy, VisionMode::Base, *engine.encode_threads, {});
  return fresh;
}

// Produces every part of the pass (rolling: every later page too, as the cached pass serves other
// requests whose uploads are not these), except rows already filled from the remote tier.
void produce_pass(const OcrEngine& engine, CachedPass& fresh, bool rows_filled) {
  const int64_t hidden = engine.model->decoder().config().hidden;
  for (ReferencePart& part : fresh.pass.reference) {
    if (part.is_embedding()) fresh.embedding_rows += static_cast<int64_t>(part.ids.size());
    if (!rows_filled) produce_keyed(part, hidden);  // here, not on the scheduler thread
  }
  if (fresh.pass.generation.rolling) {
    auto& next = fresh.pass.generation.rolling->next_page;
    while (next) {
      std::optional<ReferencePart> page = next();
      if (!page) break;
      produce_keyed(*page, hidden);
      fresh.later_pages.push_back(std::move(*page));
    }
    next = nullptr;
  }
  fresh.bytes = reference_bytes(fresh.pass.reference, hidden) + reference_bytes(fresh.later_pages, hidden);
}

// The pass's rows from the remote tier, into `pass`.
bool fill_from_remote(const OcrEngine& engine, const std::string& key, OcrPass& pass) {
  const std::optional<std::string> payload = engine.remote->get("pass", key);
  return payload && fill_pass_rows(pass, *payload, engine.model->decoder().config().hidden);
}

// The prepared pass of `key`: from this replica's reference cache (local_hit), from the remote tier
// (another replica encoded it; if another replica is encoding it now, after waiting for it, without
// holding the encoder), or encoded here, cached and offered to the tier. cached_rows: the
// embedding rows not encoded here. One request encodes at a time.
std::shared_ptr<const CachedPass> find_or_prepare(const OcrEngine& engine, const std::string& key, const OcrPages& pages, size_t first,
                                                  size_t count, const StagedUploads& u, int64_t& cached_rows, bool& local_hit) {
  auto local = [&](std::shared_ptr<const CachedPass> c) {
    cached_rows = c->embedding_rows;
    local_hit = true;
    return c;
  };
  if (std::shared_ptr<const CachedPass> c = engine.cache->find(key)) return local(std::move(c));
  std::unique_lock lk(*engine.encode_mu);
  if (std::shared_ptr<const CachedPass> c = engine.cache->find(key)) return local(std::move(c));
  std::shared_ptr<CachedPass> fresh;
  bool shared = false, remote_hit = false, claimed = false;
  try {
    fresh = lay_out_pass(engine, pages, first, count);
    shared = engine.remote && remote_pass_eligible(fresh->pass);
    if (shared) {
      // Claim first, then look: a pass another replica stored (dropping its claim) between a look
      // and a claim would otherwise be encoded again.
      claimed = engine.remote->claim("pass", key);
      remote_hit = fill_from_remote(engine, key, fresh->pass);
      if (remote_hit && claimed) {
        engine.remote->release("pass", key);
        claimed = false;
      }
      if (!claimed && !remote_hit) {
        lk.unlock();  // other documents may encode meanwhile
        const bool ready = engine.remote->wait_for("pass", key);
        lk.lock();
        if (std::shared_ptr<const CachedPass> c = engine.cache->find(key)) return local(std::move(c));
        remote_hit = ready && fill_from_remote(engine, key, fresh->pass);
      }
    }
    produce_pass(engine, *fresh, remote_hit);
  } catch (const Error& e) {
    if (claimed) engine.remote->release("pass", key);
    if (e.kind() == Error::Kind::Internal) throw;
    throw u.invalid_document(e);
  }
  engine.cache->insert(key, fresh);  // before the lock goes: a request for the same pages finds it
  lk.unlock();
  if (shared && !remote_hit) engine.remote->put("pass", key, encode_pass_rows(fresh->pass, engine.model->decoder().config().hidden));
  if (claimed) engine.remote->release("pass", key);  // after the value is stored: waiters see it
  if (remote_hit) cached_rows = fresh->embedding_rows;
  return fresh;
}

// Reference KV other replicas kept for this request's reference (its leading parts), offered to the
// scheduler before the request is submitted (it adopts offers before admitting), so their prefill is
// skipped. When the whole reference is not there, this replica claims it (it will prefill it and
// hand it on when its prefill ends) or, when another replica holds the claim, waits for that one's
// KV, so that replicas sent one document at once prefill it once. Returns the remote key this
// request claimed ("" for none): the caller releases it when the request ends.
std::string fetch_remote_prefix(const OcrEngine& engine, const SequenceRequest& sr) {
  if (!engine.remote || engine.scheduler->options().prefix_cache_bytes == 0) return "";  // nowhere to keep it
  const std::vector<std::string> keys = prefix_keys(sr.reference);
  if (keys.empty() || keys.size() != sr.reference.size()) return "";
  const std::string layout = engine.scheduler->prefix_layout_id();
  // Claim first, then look: parts another replica finished writing (dropping its claim) between a
  // look and a claim would otherwise be prefilled again.
  const std::string whole = remote_prefix_key(layout, keys.back());
  const bool claim = engine.remote->claim("kv", whole);
  std::optional<PrefixKVCache::Entry> entry = take_remote_prefix(*engine.remote, layout, keys);
  const bool complete = entry && entry->keys.size() == keys.size();
  std::string claimed;
  if (claim && complete) engine.remote->release("kv", whole);
  else if (claim) claimed = whole;
  else if (!complete && engine.remote->wait_for("kv", whole)) entry = take_remote_prefix(*engine.remote, layout, keys);
  if (entry) engine.scheduler->offer_prefix(std::move(*entry));
  return claimed;
}

// Tokens of a request's reference.
int64_t reference_length(const SequenceRequest& sr) {
  int64_t n = 0;
  for (const ReferencePart& part : sr.reference) n += static_cast<int64_t>(part.ids.size());
  return n;
}

}  // namespace

std::unique_ptr<OcrJob> OcrJob::start(const OcrEngine& engine, std::vector<UploadedFile> files, const std::string& page_range,
                                      std::optional<int64_t> max_tokens, const OcrJobLimits& limits, bool page_images) {
  std::unique_ptr<OcrJob> job(new OcrJob());
  job->engine_ = engine;
  job->limits_ = limits;
  if (files.empty()) throw bad_request("missing_field", "no file to read");
  if (max_tokens && *max_tokens > limits.max_output_length)
    throw bad_request("output_limit_exceeded", "'max_tokens' is " + std::to_string(*max_tokens) + " but this server generates at most " +
                                                   std::to_string(limits.max_output_length) + " tokens per pass (inference.max_output_length)");
  job->tmp_dir_ = unique_dir();
  const StagedUploads uploads = stage_uploads(job->tmp_dir_, files);
  job->open_pages(uploads.paths, page_range, [&](const Error& e) { return uploads.invalid_document(e); });
  for (size_t i = 0; i < job->ocr_pages_.size(); ++i) job->sources_.push_back(uploads.client_name.at(job->ocr_pages_.page(i).file));
  if (page_images) job->render_page_images([&](const Error& e) { return uploads.invalid_document(e); });
  // Passes, as run_ocr plans them (sparse: as many pages per pass as the model takes).
  OcrOptions plan_opt;
  plan_opt.policy = engine.scheduler->options().policy;
  std::vector<std::pair<size_t, size_t>> plan;
  try {
    plan = plan_ocr_passes(*engine.model, job->ocr_pages_, plan_opt);
  } catch (const Error& e) {
    throw uploads.invalid_document(e);
  }
  job->shared_ = std::make_shared<Shared>();
  job->shared_->slots.resize(plan.size());
  const auto deadline = deadline_after(limits.timeout_s);
  for (size_t k = 0; k < plan.size(); ++k) {
    auto p = std::make_unique<Pass>();
    p->first = plan[k].first;
    p->count = plan[k].second;
    const std::string key = pass_key(engine, job->ocr_pages_, p->first, p->count, uploads);
    std::shared_ptr<const CachedPass> cached = find_or_prepare(engine, key, job->ocr_pages_, p->first, p->count, uploads, p->cached_rows,
                                                                 p->local_hit);
    job->submit_pass(k, *p, std::move(cached), max_tokens, deadline);
    job->passes_.push_back(std::move(p));
  }
  // The uploads stay on disk until the job ends: figures are cropped from their pages when final.
  return job;
}

void OcrJob::open_pages(const std::vector<std::string>& paths, const std::string& page_range,
                        const std::function<ApiError(const Error&)>& invalid_document) {
  try {
    ocr_pages_ = OcrPages::open(paths, page_range, engine_.model->pdf_dpi());
  } catch (const Error& e) {
    throw invalid_document(e);
  }
  if (ocr_pages_.size() > limits_.max_pages)
    throw bad_request("too_many_pages", "the request has " + std::to_string(ocr_pages_.size()) + " pages; this server reads at most " +
                                            std::to_string(limits_.max_pages) + " per request (server.max_pages)");
  pages_.resize(ocr_pages_.size());
  figures_.resize(ocr_pages_.size());
  final_.assign(ocr_pages_.size(), false);
}

void OcrJob::submit_pass(size_t k, Pass& p, std::shared_ptr<const CachedPass> cached, std::optional<int64_t> max_tokens,
                         std::chrono::steady_clock::time_point deadline) {
  OcrModel& model = *engine_.model;
  // One sequence per pass, with a fresh copy of the model's recipe.
  OcrPass pass = model.fresh_decoding(cached->pass);
  OcrPassReader reader(model, pass, p.first, p.count);  // takes the pass's own text hooks
  SequenceRequest sr = ocr_sequence_request(std::move(pass), 0);
  const int64_t max_ref = limits_.max_reference_length > 0 ? limits_.max_reference_length : model.decoder().config().max_positions - 1;
  if (const int64_t P = reference_length(sr); P > max_ref)
    throw bad_request("context_length_exceeded", "pages " + std::to_string(p.first + 1) + "-" + std::to_string(p.first + p.count) +
                                                     " take " + std::to_string(P) + " reference tokens; this server takes at most " +
                                                     std::to_string(max_ref) + " (model.max_reference_length / the model's context)");
  if (sr.rolling) {
    // Later pages enter from the cached pass, each request reading them from the start.
    for (const ReferencePart& page : cached->later_pages)
      sr.rolling_page_tokens = std::max(sr.rolling_page_tokens, static_cast<int64_t>(page.ids.size()));
    sr.rolling->next_page = [cached, i = size_t{0}]() mutable -> std::optional<ReferencePart> {
      if (i >= cached->later_pages.size()) return std::nullopt;
      return cached->later_pages[i++];
    };
  }
  sr.max_tokens = max_tokens.value_or(std::min<int64_t>(model.max_output_tokens(p.count), limits_.max_output_length));
  sr.deadline = deadline;
  std::shared_ptr<Shared> sh = shared_;
  sr.on_token = [sh, k](int32_t t) {
    std::lock_guard lk(sh->mu);
    sh->slots[k].tokens.push_back(t);
    sh->cv.notify_all();
  };
  // Before on_done is set: a KV claim taken here is released when the request ends, after the
  // writes its reference KV queued (RemoteReferenceTier::release_later).
  const std::string kv_claim = p.local_hit ? "" : fetch_remote_prefix(engine_, sr);
  RemoteReferenceTier* remote = engine_.remote;
  sr.on_done = [sh, k, done = engine_.on_pass_done, cached_rows = p.cached_rows, kv_claim, remote](const SequenceResult& r) {
    if (!kv_claim.empty()) remote->release_later("kv", kv_claim);
    SequenceResult res = r;
    // Prompt tokens whose work was reused: KV from the prefix cache, or at least image rows from
    // the encoder-output cache.
    res.cached_prompt_tokens = std::max(r.cached_prompt_tokens, cached_rows);
    if (done) done(res);
    std::lock_guard lk(sh->mu);
    sh->slots[k].result = std::move(res);
    sh->cv.notify_all();
  };
  Submission sub;
  std::optional<ApiError> refused;
  try {
    sub = engine_.scheduler->submit(std::move(sr));
    refused = rejection_error(sub);
  } catch (const Error& e) {
    refused = bad_request("invalid_request", e.what());
  }
  if (refused) {
    if (!kv_claim.empty()) remote->release("kv", kv_claim);  // on_done will not run
    throw *refused;
  }
  p.id = sub.id;
  p.reader.emplace(std::move(reader));
}

OcrJob::~OcrJob() {
  cancel();
  if (!tmp_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(tmp_dir_, ec);
  }
}

void OcrJob::cancel() {
  for (const auto& p : passes_)
    if (!p->ended() && p->id >= 0) engine_.scheduler->cancel(p->id);
}

void OcrJob::absorb(Pass& p, const std::vector<int32_t>& fresh, const std::optional<SequenceResult>& result) {
  for (int32_t t : fresh) p.reader->push(t);
  if (result) {
    p.reader->end();
    p.result = result;
  }
  for (auto& [index, page] : p.reader->take_final_pages(warnings_)) {
    pages_[index] = std::move(page);
    final_[index] = true;
  }
}

OcrJob::Progress OcrJob::poll(std::chrono::milliseconds wait) {
  struct News {
    std::vector<int32_t> fresh;
    std::optional<SequenceResult> result;
  };
  std::vector<News> news(passes_.size());
  {
    std::unique_lock lk(shared_->mu);
    auto any = [&] {
      for (size_t k = 0; k < passes_.size(); ++k) {
        const Shared::Slot& s = shared_->slots[k];
        if (!passes_[k]->ended() && (s.tokens.size() > s.taken || s.result)) return true;
      }
      return false;
    };
    shared_->cv.wait_for(lk, wait, any);
    for (size_t k = 0; k < passes_.size(); ++k) {
      Shared::Slot& s = shared_->slots[k];
      if (passes_[k]->ended()) continue;
      news[k].fresh.assign(s.tokens.begin() + static_cast<std::ptrdiff_t>(s.taken), s.tokens.end());
      s.taken = s.tokens.size();
      news[k].result = s.result;
    }
  }
  Progress out;
  for (size_t k = 0; k < passes_.size(); ++k)
    if (!passes_[k]->ended() && (!news[k].fresh.empty() || news[k].result)) absorb(*passes_[k], news[k].fresh, news[k].result);
  while (reported_ < pages_.size() && final_[reported_]) {
    add_figures(reported_);
    out.pages.push_back(reported_++);
  }
  out.done = true;
  for (const auto& p : passes_) out.done = out.done && p->ended();
  return out;
}

void OcrJob::wait() {
  while (!poll(std::chrono::milliseconds(1000)).done) {
  }
}

std::string OcrJob::take_text() {
  return text_order_.take(passes_.size(), [this](size_t k) -> const OcrPassReader* { return passes_[k]->reader ? &*passes_[k]->reader : nullptr; });
}

void OcrJob::render_page_images(const std::function<ApiError(const Error&)>& invalid_document) {
  try {
    for (size_t i = 0; i < ocr_pages_.size(); ++i) {
      RgbImage page = ocr_pages_.render(i);
      if (page.width > kPageImageWidth)
        page = resize_bicubic(page, kPageImageWidth, std::max(1, static_cast<int>(int64_t{page.height} * kPageImageWidth / page.width)));
      page_images_.push_back(png_data_uri(page));
    }
  } catch (const Error& e) {
    throw invalid_document(e);
  }
}

void OcrJob::add_figures(size_t i) {
  if (!has_figures(pages_[i])) return;
  try {
    for (const OcrFigureCrop& c : crop_figures(ocr_pages_.render(i), i, pages_[i], "", figures_numbered_))
      figures_[i][c.name] = png_data_uri(c.image);
  } catch (const Error& e) {
    warnings_.push_back("page " + std::to_string(i + 1) + ": its figures could not be cropped: " + e.what());
  }
}

json OcrJob::page_json(size_t i) const {
  const OcrPageRef& ref = ocr_pages_.page(i);
  const PageSize size{ref.width, ref.height};
  json j = ocr_to_json({pages_.at(i)}, std::span<const PageSize>(&size, 1))["pages"][0];
  j["page"] = i + 1;
  j["source"] = sources_.at(i);
  j["source_page"] = ref.index + 1;
  if (i < page_images_.size()) j["image"] = page_images_[i];
  if (i < figures_.size())
    for (json& b : j["blocks"])
      if (b.contains("file"))
        if (auto f = figures_[i].find(b["file"].get<std::string>()); f != figures_[i].end()) b["data"] = f->second;
  return j;
}

std::string OcrJob::page_markdown(size_t i) const { return folio::page_markdown(pages_.at(i)); }

std::string OcrJob::markdown_piece(size_t i) const { return document_markdown_piece(pages_.at(i), i, pages_.size()); }

std::string OcrJob::markdown() const { return document_markdown(pages_); }

std::optional<ApiError> OcrJob::failure() const {
  for (const auto& p : passes_)
    if (p->result)
      if (auto e = generation_error(*p->result, limits_.timeout_s)) return e;
  return std::nullopt;
}

json OcrJob::usage() const {
  int64_t prompt = 0, completion = 0, cached = 0;
  for (const auto& p : passes_) {
    if (p->result) prompt += p->result->prompt_tokens;
    completion += p->reader ? static_cast<int64_t>(p->reader->tokens().size()) : 0;
    // Reused KV (a whole reference: every prompt token) or at least reused image rows.
    cached += p->result ? p->result->cached_prompt_tokens : p->cached_rows;
  }
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::vector<int32_t> OcrJob::tokens() const {
  std::vector<int32_t> all;
  for (const auto& p : passes_)
    if (p->reader) all.insert(all.end(), p->reader->tokens().begin(), p->reader->tokens().end());
  return all;
}

json OcrJob::result(bool page_images) const {
  json pages = json::array();
  for (size_t i = 0; i < pages_.size(); ++i) {
    pages.push_back(page_json(i));
    if (!page_images) pages.back().erase("image");
  }
  int64_t ref_tokens = 0, decode_tokens = 0;
  double ttft_ms = 0, decode_ms = 0;
  json stops = json::array();
  for (const auto& p : passes_) {
    if (p->result) {
      ref_tokens += p->result->prompt_tokens;
      stops.push_back(std::string(p->result->stop_reason.name()));
      // Passes run side by side: the first token of any, the longest decode of all.
      if (!p->result->tokens.empty() && (ttft_ms == 0 || p->result->ttft_ms < ttft_ms)) ttft_ms = p->result->ttft_ms;
      decode_ms = std::max(decode_ms, p->result->decode_ms);
    }
    if (p->reader) decode_tokens += static_cast<int64_t>(p->reader->tokens().size());
  }
  json j = {{"object", "ocr"},
            {"model", engine_.model_id},
            {"mode", "base"},
            {"markdown", markdown()},
            {"pages", pages},
            {"usage", usage()},
            {"stats",
             {{"pages", pages_.size()},
              {"passes", passes_.size()},
              {"reference_tokens", ref_tokens},
              {"decode_tokens", decode_tokens},
              {"queue_to_first_token_ms", ttft_ms},
              {"decode_ms", decode_ms},
              {"stop_reasons", stops}}}};
  if (!warnings_.empty()) j["warnings"] = warnings_;
  return j;
}

}  // namespace folio
