// Generator: prefill a reference into a fresh sequence, then decode token by token, on the calling
// thread. It is the scheduler's loop (runtime/scheduler.h) run synchronously for one request: the
// CLI, the benchmarks and the server decode with the same code.
//
// The reference is a sequence of parts, each fed either by token id or as precomputed embedding
// rows (an OCR prompt: BOS + text tokens, the pages' image embeddings, text tokens). Every part is
// prefilled in chunks of `prefill_chunk` rows so activations stay bounded for long references, and
// an embedding part is produced only when prefill reaches it, so a caller can encode one page at a
// time and never hold every page's rows. Every later token is a generated token, kept or evicted by
// the KV policy.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/kv_policy.h"
#include "kv/tiered_store.h"
#include "model/decoder.h"
#include "runtime/prefix_kv_cache.h"
#include "runtime/sequence_request.h"
#include "text/sampler.h"

namespace folio {

struct SchedulerStats;  // runtime/scheduler.h

// What Generator takes per call: the request's decoding options, the KV policy and the prefill chunk.
struct GenerationOptions : DecodingOptions {
  GenerationOptions() = default;
  explicit GenerationOptions(DecodingOptions d) : DecodingOptions(std::move(d)) {}
  KVPolicy policy;
  int64_t prefill_chunk = 2048;  // reference rows per forward pass (a MoE layer converts its experts once per pass)
};

// What a generation gives back: the scheduler's SequenceResult (one result type for both), with
// "stopped" for a generation its on_token callback ended; an "error" result is thrown instead.
using GenerationResult = SequenceResult;

class Generator {
 public:
  Generator(Decoder& decoder, KVBlockPool& pool, ThreadPool& threads) : dec_(decoder), pool_(pool), threads_(threads) {}

  // Validates options and reference (non-empty, fits the context, rows of the right size),
  // prefills, decodes. on_token is called for every generated token; returning false stops
  // generation ("stopped").
  GenerationResult generate(std::span<const ReferencePart> reference, const GenerationOptions& opt,
                            const std::function<bool(int32_t)>& on_token = {});

  // A reference of token ids only.
  GenerationResult generate(const std::vector<int32_t>& prompt, const GenerationOptions& opt,
                            const std::function<bool(int32_t)>& on_token = {});

  // Several references decoded side by side, at most `max_batch` at once (in order), each item made
  // only when it can start, so a long run holds what decodes now, not every item: `next` is asked
  // for an item whenever fewer than `max_batch` decode (first before anything runs, then after an
  // item ends, in the on_done's wake) and returns nullopt when it has none to give now; the call
  // ends once nothing decodes and `next` gives nothing. Items decode under the first item's policy
  // and prefill chunk. Every sequence prefills before any decodes, so on the GEMV path (fewer than
  // matmul_gemm_min_rows sequences) each gets exactly the tokens generate() gives it alone, while
  // the weights are read once per step for all of them. Each result goes only to its item's
  // on_done (on this thread), nothing is kept. An item's reference must live until its on_done.
  // The first exception (from `next`, an on_token, an on_done, or a sequence's error) ends every
  // item, with no more callbacks, and is rethrown. `stats`, when given, receives the scheduler's
  // counters at the end (forward passes, their time).
  struct BatchItem {
    std::span<const ReferencePart> reference;
    GenerationOptions options;
    std::function<bool(int32_t)> on_token;
    std::function<void(const GenerationResult&)> on_done;
  };
  void generate_fed(const std::function<std::optional<BatchItem>()>& next, int64_t max_batch, SchedulerStats* stats = nullptr);

  // From now on the reference KV of finished requests is kept (up to `bytes`, LRU) and a later call
  // whose reference repeats leading parts restores them instead of prefilling (the server's prefix
  // cache; runtime/prefix_kv_cache.h). Not for requests with a reference store (those skip it).
  void keep_references(size_t bytes) { prefix_cache_ = bytes > 0 ? std::make_unique<PrefixKVCache>(bytes) : nullptr; }
  PrefixKVStats prefix_cache_stats() const { return prefix_cache_ ? prefix_cache_->stats() : PrefixKVStats{}; }

 private:
  Decoder& dec_;
  KVBlockPool& pool_;
  ThreadPool& threads_;
  std::unique_ptr<PrefixKVCache> prefix_cache_;  // keep_references
};

}  // namespace folio
