// Scheduler: continuous batching of many generation requests over one Decoder.
//
// One scheduler thread owns the decoder, the KV pool and the compute threads. Every step it
//   1. applies cancellations and deadlines (a finished sequence's KV is released before the step
//      goes on, so its bytes are free for the next admission),
//   2. admits waiting requests in arrival order while the running batch has room and the KV pool
//      can hold the newcomer's worst case (see kv_bytes_needed) on top of what every running
//      sequence may still claim,
//   3. runs the step's forward passes over every running sequence: one token for each decoding
//      sequence plus a chunk of prompt for sequences still prefilling (at most prefill_chunk prompt
//      tokens per step in all, oldest first), so a long prompt never stalls the others' decoding.
//      Batch-invariant (the default): the decode rows in one pass on the GEMV path and each whole
//      prefill chunk in a pass of its own, so each row is computed as when its request runs alone;
//      otherwise one pass over all rows,
//   4. samples the next token of every sequence whose prompt is complete, and finishes those that
//      hit EOS, max_tokens or the model's context.
// Sequences thus join and leave the running batch at every step. Admission reads the pool's
// counters (bytes in use, per sequence) and its capacity; a request whose worst case exceeds the
// capacity even of an empty pool is refused at submit, and when the wait queue is full a request is
// refused too (the HTTP layer answers 503 + Retry-After). Because of this reservation the pool is
// never asked for more than it has.
//
// Reference reuse: with a prefix cache (SchedulerOptions::prefix_cache_bytes), a sequence that ends
// with its reference complete leaves a copy of its reference KV behind (PrefixKVCache), one segment
// per part; a later request whose reference starts with the same parts (by content key) starts
// from that copy instead of prefilling them, and one with the very same reference also takes the
// logits its first token is sampled from, so it skips prefill entirely. The KV is the same bytes as
// a prefill would have written, so the tokens are the same (tested). Not under `rolling`.
//
// A rolling request keeps a few pages resident: each time its model writes the page separator, the
// oldest page's KV is freed and the next page is prefilled (in chunks, like any prefill) before the
// separator is fed back, so a document of any length takes the KV of a few pages.
//
// Each request's tokens are exactly those it gets alone in a scheduler with the same options
// (batch_invariant; tests/runtime/batch_invariance_test), and those Generator gives it alone when
// the prefill chunks agree too or the decoder's per-row results do not depend on the rows' count
// (the GEMV path, see kernels/cpu/matmul.h). That includes OCR requests: a reference of ReferenceParts (token ids, or
// embedding rows produced when prefill reaches the part) and an embed_token hook that feeds each
// generated token back as an embedding row (the mini OCR model's position codes). A lazy part is
// produced on the scheduler thread, so an expensive producer (a page encoder) delays the step of
// every running sequence: callers that can should hand in rows already computed.
//
// Synchronous mode (SchedulerOptions::synchronous): no thread is started; the caller submits and
// then drives the steps with run_until_idle() on its own thread, where the callbacks run. This is
// how Generator decodes: one loop for the CLI, the benchmarks and the server.
//
// Thread-safe: submit, cancel and stats may be called from any thread. Callbacks run on the
// scheduler thread (the caller's, when synchronous) and must be quick (push into a queue); they may
// call cancel(): from a request's own on_token it takes effect at once (no later rule runs for that
// token and nothing more is decoded for it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/kv_policy.h"
#include "model/decoder.h"
#include "runtime/sequence_request.h"
#include "runtime/prefix_kv_cache.h"
#include "text/sampler.h"

namespace folio {

struct SchedulerOptions {
  KVPolicy policy;
  int64_t max_batch = 8;         // sequences in the running batch at most
  int64_t prefill_chunk = 256;   // prompt tokens prefilled per step, over all prefilling sequences
  size_t max_queue = 64;         // requests waiting for admission at most; more are refused
  int64_t block_tokens = kDefaultBlockTokens;  // KV block size of each sequence
  size_t prefix_cache_bytes = 0; // reference KV kept for reuse across requests; 0 = none
  // When set, every request without a store of its own moves its complete reference segments here
  // (SequenceRequest::reference_store); admission then reserves only what stays in the pool. Must
  // outlive the scheduler; not with a prefix cache.
  TieredStore* reference_store = nullptr;
  // When set, the prefix cache used instead of one of prefix_cache_bytes: it outlives the scheduler,
  // so a later scheduler (Generator's next call) finds what this one kept. Not thread-safe: one
  // scheduler uses it at a time.
  PrefixKVCache* shared_prefix_cache = nullptr;
  bool synchronous = false;      // no scheduler thread: the caller drives it with run_until_idle()
  // Admission waits until the pool can hold a request's worst case on top of what running ones may
  // still claim, and a request whose worst case exceeds the pool's capacity is refused at submit.
  // false: admitted whatever the capacity, a sequence that outgrows the pool ends with "error" and
  // the pool's OutOfMemory error (Generator's behaviour: a budget is a limit, not a promise).
  bool reserve_worst_case = true;
  // No sequence decodes in a step where another still prefills: decode rows then never share a
  // forward pass with prefill rows, so on the GEMV path (batches under matmul_gemm_min_rows rows)
  // every sequence gets exactly the tokens it gets alone (the CLI's passes side by side).
  bool prefill_before_decode = false;
  // Every request gets the tokens it gets alone, whatever else runs (the default): decode rows go in
  // a forward pass of their own on the GEMV path (kernels::RowInvariantScope), each prefill chunk in
  // a pass of its own, and chunks are whole (a sequence the step's budget cannot give a whole chunk
  // waits a step), so no row's products depend on which rows share its pass. false: one pass per
  // step over all rows (sgemm once more than matmul_gemm_min_rows rows meet), which reads the
  // weights once per step instead of once per pass; docs/benchmarks.md measures the difference.
  bool batch_invariant = true;
  // Called on the scheduler thread with each entry the prefix cache keeps (a copy sharing its KV),
  // e.g. to hand it to other replicas; it must return quickly (queue the work elsewhere).
  std::function<void(const PrefixKVCache::Entry&)> on_prefix_kept = nullptr;
};

enum class Rejection { None, QueueFull, ExceedsKVBudget, Stopped };

struct Submission {
  RequestId id = -1;
  Rejection rejected = Rejection::None;
  std::string message;  // why, when rejected
  bool accepted() const { return rejected == Rejection::None; }
};

// A consistent snapshot, updated by the scheduler thread after every step.
struct SchedulerStats {
  int64_t running = 0;           // sequences in the batch (prefilling or decoding)
  int64_t queued = 0;            // waiting for admission
  size_t kv_bytes_in_use = 0;    // the pool's counter
  size_t kv_bytes_capacity = 0;  // 0 = unlimited
  size_t kv_bytes_peak = 0;
  size_t kv_bytes_reserved = 0;  // what running sequences may still claim
  int64_t reference_tokens = 0;  // cached reference tokens of running sequences
  int64_t window_tokens = 0;     // cached generated tokens of running sequences
  uint64_t steps = 0;            // forward passes
  // Their time: passes with prefill rows (with prefill_before_decode: nothing else), and passes of
  // decode rows only. Producing embedding parts (encoding pages) is in neither.
  double prefill_forward_ms = 0, decode_forward_ms = 0;
  uint64_t sequence_steps = 0;   // sum over steps of the sequences in the batch
  int64_t max_batch_seen = 0;    // most sequences in one forward pass
  uint64_t prompt_tokens = 0;    // prefilled, in total
  uint64_t generated_tokens = 0; // sampled, in total
  PrefixKVStats prefix_cache;    // reference KV reuse across requests
  std::optional<TieredStoreStats> reference_store;  // SchedulerOptions::reference_store, read live
};

class Scheduler {
 public:
  // Starts the scheduler thread. decoder, pool and threads must outlive the scheduler and must not
  // be used by anyone else meanwhile. Throws InvalidInput for bad options.
  Scheduler(Decoder& decoder, KVBlockPool& pool, ThreadPool& threads, SchedulerOptions options);
  // Stops: every unfinished request ends with "cancelled".
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Throws InvalidInput for a bad one (empty prompt or reference part, both prompt
  // and reference given, prompt that leaves no room in the context, token id outside the
  // vocabulary, negative max_tokens, bad sampling params); returns a rejection when it cannot be
  // taken. An embedding part that produces the wrong number of values ends its request with
  // "error" when prefill reaches it.
  Submission submit(SequenceRequest request);

  // Ends a waiting or running request with "cancelled" and frees its KV at the next step boundary
  // (before the next forward pass). A finished or unknown id is ignored.
  void cancel(RequestId id);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return opt_; }
  const ModelConfig& model_config() const { return dec_.config(); }

  // Worst-case pool bytes of a request (KVFootprint::worst_case_bytes): its reference parts, each a
  // segment of blocks, plus under a window the window ring (under full, the blocks of every
  // generated token fed back), in the pool's storage types.
  // reference_offloaded: its complete segments go to a reference store.
  size_t kv_bytes_needed(std::span<const int64_t> part_tokens, int64_t max_tokens, bool reference_offloaded = false) const;
  // ... of a reference in one part.
  size_t kv_bytes_needed(int64_t prompt_tokens, int64_t max_tokens) const {
    return kv_bytes_needed(std::span<const int64_t>(&prompt_tokens, 1), max_tokens);
  }

  // Offers reference KV from elsewhere (another replica) to the prefix cache; thread-safe. The
  // scheduler thread keeps it before it admits the next request, if prefix_entry_fits() its pool
  // and the cache has no such entry; otherwise drops it (stats: prefix_cache.offers_refused).
  void offer_prefix(PrefixKVCache::Entry entry);
  // What the reference KV of this scheduler depends on besides the model and the content: storage
  // types, rotation, block size, policy ("bf16/rotated=0/block=16/rswa:128").
  std::string prefix_layout_id() const;

  // Ends every request ("cancelled") and the thread. Idempotent.
  void stop();

  // Synchronous schedulers only: runs steps on the calling thread until no request is waiting or
  // running. A waiting request that cannot be admitted with nothing running ends with "error".
  void run_until_idle();

 private:
  struct Active;
  struct Waiting {
    RequestId id;
    SequenceRequest req;
    size_t need;
    std::chrono::steady_clock::time_point submitted;
    std::vector<std::string> keys;  // prefix chain keys of its parts (empty without a prefix cache)
  };
  struct Done {
    std::function<void(const SequenceResult&)> cb;
    SequenceResult result;
  };

  void loop();
  void iterate();  // one round: cancellations, reaping, admission, one step, stats, callbacks
  void shut_down();
  bool cancel_requested(RequestId id) const;
  void reap(std::vector<Done>& done);
  void admit(std::vector<Done>& done);
  // One forward pass over the running batch (prefill chunks and decode tokens), and its tokens.
  struct Batch {
    std::vector<Decoder::Input> inputs;
    std::vector<Active*> owners;
    std::vector<int64_t> prefill;  // prompt rows in each input (0 = a decode input)
  };
  void step(std::vector<Done>& done);
  std::vector<std::pair<size_t, size_t>> plan_passes(Batch& b) const;
  int64_t rows_left_in_part(const Active& a) const;
  void take_cached_first_tokens(std::vector<Done>& done);
  Batch gather_batch(std::vector<Done>& done);
  Decoder::Input prefill_input(Active& a, int64_t budget);
  Decoder::Input decode_input(Active& a);
  bool advance_prefill(Active& a, int64_t n, std::span<const float> row, std::vector<Done>& done);
  // A request that never ran ends: its result (no tokens) joins `done`, which the caller may amend.
  Done& end_waiting(Waiting& w, StopReason reason, const std::string& error, std::vector<Done>& done);
  void finish(Active& a, StopReason reason, const std::string& error, std::vector<Done>& done,
              std::exception_ptr exception = nullptr);
  void reuse_prefix(Active& a);
  void refocus(Active& a);
  void keep_prefix(Active& a);
  void adopt_offered(std::vector<PrefixKVCache::Entry>& offered);
  // Samples the next token of `a` from `row` (its logits) and applies the stopping rules.
  void take_token(Active& a, std::span<float> row, std::chrono::steady_clock::time_point at, std::vector<Done>& done);
  void publish_stats();

  Decoder& dec_;
  KVBlockPool& pool_;
  ThreadPool& threads_;
  const SchedulerOptions opt_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Waiting> waiting_;     // guarded by mu_
  std::set<RequestId> cancels_;     // guarded by mu_
  std::vector<PrefixKVCache::Entry> offered_;  // guarded by mu_
  bool stop_ = false;               // guarded by mu_
  SchedulerStats stats_;            // guarded by mu_
  RequestId next_id_ = 1;           // guarded by mu_

  // Scheduler thread only.
  std::vector<std::unique_ptr<Active>> running_;
  std::vector<float> logits_;
  SchedulerStats counters_;
  uint64_t admissions_ = 0;
  PrefixKVCache own_prefix_;  // SchedulerOptions::prefix_cache_bytes
  PrefixKVCache& prefix_;     // own_prefix_, or SchedulerOptions::shared_prefix_cache
  std::thread thread_;
};

}  // namespace folio
