// ServingEngine: one loaded model behind a running Scheduler, and what OCR requests share on it
// (prepared-reference cache, the Redis tier, the encoder threads). It is `folio serve` without
// HTTP: the Service answers requests from one, and the Python module (python/) runs one in process.
//
// Lifecycle:
//   ServingEngine(cfg)  validates the settings that need no model (attention.*, the KV dtypes):
//                       Error(InvalidInput / Unsupported) naming the config key at fault
//   load()              loads model.path (an OCR model directory, a GGUF text model + mmproj, or a
//                       text model), builds the KV pool and starts the scheduler thread; Error
//                       (InvalidInput for a bad checkpoint, Unsupported for a setting the engine lacks)
//   stop()              cancels every running and queued request; the scheduler thread ends
// Accessors other than loaded() and the options need load() first.
//
// Threads: after load(), the scheduler and start_ocr_job may be used from any thread (see
// scheduler.h and ocr_job.h); load() and stop() from one thread, not concurrently with anything.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kv/kv_layout.h"
#include "kv/kv_policy.h"
#include "runtime/sequence_request.h"
#include "server/ocr_job.h"
#include "server/reference_cache.h"
#include "server/server_config.h"

namespace folio {

class Decoder;
class KVBlockPool;
class OcrModel;
class RemoteReferenceTier;
class Scheduler;
class ThreadPool;
class TieredStore;
class Tokenizer;
struct LoadedModel;
struct UploadedFile;

class ServingEngine {
 public:
  explicit ServingEngine(const ServerConfig& cfg);
  ~ServingEngine();  // stops
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  void load();
  void stop();
  bool loaded() const { return scheduler_ != nullptr; }

  Scheduler& scheduler() { return *scheduler_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  Decoder& decoder() { return *decoder_; }
  const Decoder& decoder() const { return *decoder_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  OcrModel* ocr_model() { return ocr_model_.get(); }  // null for a text model
  ReferenceCache& reference_cache() { return cache_; }
  RemoteReferenceTier* remote() { return remote_.get(); }  // null without remote.redis
  const KVPolicy& policy() const { return policy_; }

  // The most tokens a text request with `prompt_tokens` of prompt may generate (inference.
  // max_output_length and the model's context); ApiError 400 context_length_exceeded when the prompt
  // is longer than model.max_reference_length or the context allows, invalid_value when max_tokens
  // is given and not within 1 and that.
  int64_t output_limit(int64_t prompt_tokens, std::optional<int64_t> max_tokens) const;

  // An OcrJob over `files` on this engine, named `model_id` in its results; on_pass_done runs on
  // the scheduler thread for every pass that ends. ApiError 400 (unsupported_content) when the
  // model is a text model; otherwise as OcrJob::start.
  std::unique_ptr<OcrJob> start_ocr_job(std::vector<UploadedFile> files, const std::string& pages,
                                        std::optional<int64_t> max_tokens, const OcrJobLimits& limits,
                                        const std::string& model_id,
                                        std::function<void(const SequenceResult&)> on_pass_done = nullptr,
                                        bool page_images = false);

 private:
  ServerConfig cfg_;
  KVPolicy policy_;
  KVTypes kv_types_;
  std::unique_ptr<LoadedModel> model_;     // a text model, or
  std::unique_ptr<OcrModel> ocr_model_;    // an OCR model
  Decoder* decoder_ = nullptr;             // of whichever was loaded
  const Tokenizer* tokenizer_ = nullptr;
  ReferenceCache cache_;
  std::unique_ptr<RemoteReferenceTier> remote_;  // remote.redis; null when not set
  // Pages are encoded on the requests' threads, one request at a time (encode_mu_), with the
  // calling thread alone: more workers would compete, spinning, with the scheduler's for the cores.
  std::unique_ptr<ThreadPool> encode_threads_;
  std::mutex encode_mu_;
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<KVBlockPool> pool_;
  std::unique_ptr<TieredStore> reference_store_;  // inference.kv_offload_dir; outlives the scheduler
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace folio
