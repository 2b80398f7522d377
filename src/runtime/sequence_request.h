// The one request type of the engine: a reference (ReferencePart) and how to decode after it
// (DecodingOptions), whoever decodes it. Generator (the CLI, the benchmarks) and the Scheduler (the
// server) take the same options; SequenceRequest adds what only a queued request has (a deadline,
// callbacks), GenerationOptions what Generator sets per call (the KV policy, the prefill chunk).
// Hooks run on the decoding thread (the scheduler's, or the caller's for Generator), in order.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_policy.h"
#include "kv/tiered_store.h"
#include "runtime/stop_reason.h"
#include "text/sampler.h"

namespace folio {

using RequestId = int64_t;
class SequenceKV;  // kv/sequence_kv.h

// One piece of the reference.
struct ReferencePart {
  // Token ids. For an embedding part, the ids at its positions as the n-gram guard sees them (for
  // images: the placeholder id, as the official code keeps it in input_ids); their count is the
  // number of rows the part must produce.
  std::vector<int32_t> ids;
  // Embedding part: returns the rows [ids.size(), hidden], called once when prefill reaches the
  // part. Unset: the ids are fed.
  std::function<std::vector<float>()> embeddings;

  static ReferencePart tokens(std::vector<int32_t> ids);
  // Rows already computed ([ids.size(), hidden]).
  static ReferencePart rows(std::vector<int32_t> ids, std::vector<float> rows);
  static ReferencePart lazy(std::vector<int32_t> ids, std::function<std::vector<float>()> produce);
  bool is_embedding() const { return static_cast<bool>(embeddings); }
  // What the part's rows are, for reusing its KV across requests (runtime/prefix_kv_cache.h): a
  // content hash of the rows, or empty when unknown (then nothing from this part on is reused).
  // Token parts are keyed by their ids and need none.
  std::string key;
  // A page of a rolling reference (see DecodingOptions::rolling); other parts stay for good.
  bool page = false;
  // Offsets (within the part) where sparse attention units start besides the part's start, e.g.
  // the rows of a page: units never straddle them (SparseSelection::begin_unit).
  std::vector<int64_t> unit_starts;
};

struct DecodingOptions {
  int64_t max_tokens = 256;      // generated tokens at most (EOS included)
  SamplingParams sampling;       // temperature 0 = greedy
  int no_repeat_ngram = 0;       // 0 = off; otherwise ban tokens completing a repeated n-gram
  int no_repeat_window = 128;    // looking back this many tokens (reference ids + output)
  bool stop_at_eos = true;
  // When set, each generated token is fed back to the decoder as the embedding row this hook
  // writes (`hidden` floats) instead of by id (models whose output tokens are embedded by more than
  // the decoder's own table). Unset: fed by id.
  std::function<void(int32_t token, float* row)> embed_token;
  // Rolling reference (policy `rolling`): the reference parts marked `page` form a queue. Each time
  // the model writes `separator`, the oldest resident page leaves the KV and the next page from
  // `next_page` (nullopt when none is left) enters it ahead of the decoder, before the separator is
  // fed back. Pages entering later are not seen by the n-gram guard.
  struct Rolling {
    int32_t separator = -1;
    std::function<std::optional<ReferencePart>()> next_page;
  };
  std::optional<Rolling> rolling;
  // The token the model writes between pages (-1: none). Under `sparse` the page the decoder is on
  // (the reference parts marked `page`, in order, advancing at each separator) and the
  // KVPolicy::focus_pages - 1 after it are read whole.
  int32_t page_separator = -1;
  // When set, complete reference segments leave the pool for this store (hot RAM, cold file; see
  // SequenceKV's reference_store), which must outlive the request; not with a prefix cache.
  TieredStore* reference_store = nullptr;
  // Called with the sequence's KV after each decode step (the forward pass of a generated token,
  // before the next one is chosen), e.g. for a benchmark to read the bytes it holds and the bytes
  // the step's query read. Not after prefill.
  std::function<void(const SequenceKV&)> on_step;
  // Called with the logits each generated token is chosen from (before the n-gram guard), e.g. to
  // compare two KV configurations step by step.
  std::function<void(std::span<const float>)> on_logits;
  // When set, may rule tokens out (set their logits to -inf) before each choice, after on_logits
  // and before the n-gram guard: a model whose output has a grammar (folio-mini-ocr 2: one action
  // per line, then the page token). It must leave at least one token allowed.
  std::function<void(std::span<float>)> constrain;
  // Teacher forcing: when set, the tokens fed back (and returned) are these, in order, and what the
  // model would have chosen at each step goes to the result's `predicted`. Generation stops (length)
  // when they run out. Measures per-step agreement without one early difference shifting the rest.
  std::vector<int32_t> teacher;
};

struct SequenceResult {
  RequestId id = -1;
  StopReason stop_reason;        // runtime/stop_reason.h
  std::string error;             // what went wrong, for "error"
  std::exception_ptr exception;  // ... and the exception that said so, when one did
  std::vector<int32_t> tokens;   // generated ids (a stopping EOS included)
  std::vector<int32_t> predicted;  // teacher forcing: the model's own choice at each step
  int64_t prompt_tokens = 0;
  int64_t reference_tokens = 0;  // reference tokens in the KV at the end (rolling: every page that entered)
  int64_t cached_prompt_tokens = 0;  // prompt tokens whose KV was reused from the prefix cache
  double queue_ms = 0;           // submit -> admission
  double ttft_ms = 0;            // submit -> first token (0 if none)
  double decode_ms = 0;          // first token -> last token, less the pages that entered meanwhile (rolling)
  // Time producing embedding parts and entering pages (e.g. encoding pages), and of the forward
  // passes that prefilled this sequence's reference (shared with the batch's other sequences).
  double produce_ms = 0, prefill_ms = 0;
  size_t kv_bytes_peak = 0;      // this sequence's bytes in the pool, at its largest
  size_t kv_bytes_final = 0;     // its bytes in the pool when it ended (after --kv-keep's compression)
  size_t kv_active_bytes_max = 0;      // most KV bytes one generated token read (SequenceKV::active_bytes)
  size_t kv_offloaded_bytes_peak = 0;  // most of its bytes in the reference store at once
};

// The time point `seconds` from now, for SequenceRequest::deadline.
inline std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// A request queued with the Scheduler.
struct SequenceRequest : DecodingOptions {
  // The reference, either by token id in `prompt` or as parts in `reference` (then `prompt` must be
  // empty; submit() fills it with the parts' ids, which are what the n-gram guard sees). Parts are
  // prefilled in order; a chunk never spans two parts.
  std::vector<int32_t> prompt;
  std::vector<ReferencePart> reference;
  // Rolling: most tokens of a page that may enter (reserved at admission); 0 = the largest initial
  // page. next_page runs on the scheduler thread: hand in pages whose rows are already produced.
  int64_t rolling_page_tokens = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // then finished with "timeout" (deadline_after)
  std::function<void(int32_t token)> on_token;                 // each generated token, in order
  std::function<void(const SequenceResult&)> on_done;           // exactly once, after KV is freed
};


// Produces an embedding part's rows now and keys the part by their content (SHA-256), so that a
// later request with the same rows can reuse their KV (runtime/prefix_kv_cache.h), whatever
// document they came from. Token parts are left as they are. Error(Internal) when the rows are not
// ids.size() x hidden.
void produce_keyed(ReferencePart& part, int64_t hidden);

// Starts the KV segment of `part` in `kv` (each reference part is one segment: what sparse selects
// within, rolling drops and the prefix cache reuses), with its sparse unit starts. Call before
// its first row is appended.
void begin_reference_part(SequenceKV& kv, const ReferencePart& part);

// sparse: the KV segments read whole when the decoder is on page `page_now` (counting the parts
// marked `page`, one segment per part): that page and the policy's focus_pages - 1 after it.
std::vector<size_t> focus_segments(std::span<const ReferencePart> reference, size_t page_now, const KVPolicy& policy);
// sparse with neighbour_pages >= 0: the segments the top-k may come from: the pages from
// neighbour_pages before `page_now` to neighbour_pages after its focus (empty: any page).
std::vector<size_t> neighbour_segments(std::span<const ReferencePart> reference, size_t page_now, const KVPolicy& policy);

}  // namespace folio
