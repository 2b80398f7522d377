#include "server/serving_engine.h"

#include <filesystem>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kv/block_pool.h"
#include "kv/file_tier.h"
#include "kv/kv_dtype.h"
#include "kv/ram_tier.h"
#include "runtime/loaded_model.h"
#include "runtime/ocr_model.h"
#include "runtime/scheduler.h"
#include "server/api_error.h"
#include "server/remote_prefix.h"
#include "server/remote_reference_tier.h"

namespace folio {

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

// attention.* as a KV policy, checked by the policy's own rules.
KVPolicy policy_from(const ServerConfig::Attention& a) {
  KVPolicy p = KVPolicy::parse(a.type, a.decode_window_size);
  p.top_k = a.sparse_top_k;
  p.unit_tokens = a.sparse_unit_tokens;
  p.focus_pages = a.sparse_focus_pages;
  p.neighbour_pages = a.sparse_neighbour_pages;
  p.resident_pages = a.resident_pages;
  p.keep = a.kv_keep;
  p.observe = a.kv_observe;
  p.rules().validate(p);
  return p;
}

SchedulerOptions scheduler_options(const ServerConfig::Inference& in, const KVPolicy& policy) {
  SchedulerOptions so;
  so.policy = policy;
  so.max_batch = in.batch_size;
  so.prefill_chunk = in.prefill_chunk;
  so.batch_invariant = in.batch_invariant;
  so.max_queue = static_cast<size_t>(in.max_queued_requests);
  so.prefix_cache_bytes = static_cast<size_t>(in.prefix_cache_bytes);
  return so;
}

}  // namespace

ServingEngine::ServingEngine(const ServerConfig& cfg)
    : cfg_(cfg), policy_(policy_from(cfg.attention)), cache_(static_cast<size_t>(cfg.inference.reference_cache_bytes)) {
  if (!cfg_.attention.causal) throw Error(Error::Kind::Unsupported, "attention.causal: the decoder only runs causal attention (set true)");
  if (cfg_.inference.dtype != "auto")
    throw Error(Error::Kind::Unsupported, "inference.dtype: weights are used in the dtype the checkpoint stores them in; only 'auto' is supported, got '" +
                                              cfg_.inference.dtype + "'");
  kv_types_ = parse_kv_types(cfg_.inference.kv_dtype, cfg_.inference.kv_dtype_k, cfg_.inference.kv_dtype_v, cfg_.inference.kv_dtype_window);
  kv_types_.rotated = cfg_.inference.kv_rotate;
}

ServingEngine::~ServingEngine() { stop(); }

void ServingEngine::stop() {
  if (scheduler_) scheduler_->stop();
}

void ServingEngine::load() {
  const std::string path = resolved_model_path(cfg_);
  if (!std::filesystem::exists(path)) throw_invalid("model.path: " + path + " does not exist");
  if (is_ocr_model_dir(path) || !cfg_.model.mmproj.empty()) {
    ocr_model_ = load_ocr_model(path, cfg_.model.weights, cfg_.model.mmproj);
    ocr_model_->set_encoder_precision(kernels::gemm_precision_from_name(cfg_.model.encoder_precision, "model.encoder_precision"));
    ocr_model_->set_prefill_precision(kernels::gemm_precision_from_name(cfg_.model.prefill_precision, "model.prefill_precision"));
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
  encode_threads_ = std::make_unique<ThreadPool>(1);
  pool_ = std::make_unique<KVBlockPool>(decoder_->kv_layout(kv_types_), static_cast<size_t>(cfg_.inference.kv_budget_bytes));
  SchedulerOptions so = scheduler_options(cfg_.inference, policy_);
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
}

int64_t ServingEngine::output_limit(int64_t P, std::optional<int64_t> max_tokens) const {
  const ModelConfig& mc = decoder_->config();
  const int64_t max_ref = cfg_.model.max_reference_length > 0 ? cfg_.model.max_reference_length : mc.max_positions - 1;
  if (P > max_ref)
    throw bad_request("context_length_exceeded", "the prompt has " + std::to_string(P) + " tokens; this server takes at most " +
                                                     std::to_string(max_ref) + " (model.max_reference_length / the model's context)");
  const int64_t limit = std::min<int64_t>(cfg_.inference.max_output_length, mc.max_positions - P);
  if (max_tokens && (*max_tokens < 1 || *max_tokens > limit))
    throw bad_request("invalid_value", "'max_tokens' is " + std::to_string(*max_tokens) + " but must be from 1 to " + std::to_string(limit) +
                                           " (inference.max_output_length, and the model's context after " +
                                           std::to_string(P) + " prompt tokens)");
  return limit;
}

std::unique_ptr<OcrJob> ServingEngine::start_ocr_job(std::vector<UploadedFile> files, const std::string& pages,
                                                     std::optional<int64_t> max_tokens, const OcrJobLimits& limits,
                                                     const std::string& model_id,
                                                     std::function<void(const SequenceResult&)> on_pass_done, bool page_images) {
  if (!ocr_model_)
    throw bad_request("unsupported_content", "model '" + model_id + "' is a text model: it does not read documents or images");
  OcrEngine e;
  e.model = ocr_model_.get();
  e.scheduler = scheduler_.get();
  e.cache = &cache_;
  e.remote = remote_.get();
  e.encode_threads = encode_threads_.get();
  e.encode_mu = &encode_mu_;
  e.on_pass_done = std::move(on_pass_done);
  e.model_id = model_id;
  return OcrJob::start(e, std::move(files), pages, max_tokens, limits, page_images);
}

}  // namespace folio
