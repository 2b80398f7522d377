#include "runtime/scheduler.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kv/kv_footprint.h"
#include "kv/sequence_kv.h"
#include "runtime/prefix_entry_codec.h"
#include "text/no_repeat_ngram.h"

namespace folio {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

struct Scheduler::Active {
  RequestId id = -1;
  SequenceRequest req;
  std::unique_ptr<SequenceKV> kv;
  Sampler sampler;
  std::optional<NoRepeatNGram> guard;
  std::vector<int32_t> history;  // prompt + generated, for the n-gram guard
  std::vector<int32_t> tokens;   // generated
  int64_t prefilled = 0;         // prompt tokens in the KV
  size_t part = 0;               // the reference part prefill is in
  int64_t part_offset = 0;       // rows of that part already prefilled
  std::vector<float> rows;       // the current embedding part's rows, once produced
  bool rows_ready = false;
  std::vector<float> fed_row;    // embed_token's output for the next decode input
  std::vector<std::string> keys; // prefix chain keys of its parts
  std::vector<float> final_logits;    // after the last part, kept for the prefix cache
  std::vector<float> pending_logits;  // taken from the prefix cache: the first token comes from them
  int64_t cached_tokens = 0;     // reference tokens restored from the prefix cache
  std::deque<size_t> resident;   // rolling: KV segments of the resident pages, oldest first
  std::optional<ReferencePart> entering;  // rolling: the page being prefilled before the separator is fed
  size_t page_now = 0;           // sparse: the page (among parts marked `page`) the decoder is on
  size_t need = 0;               // worst-case bytes reserved at admission
  size_t peak = 0, active_max = 0, offloaded_peak = 0;
  std::vector<int32_t> predicted;  // teacher forcing
  double produce_ms = 0, prefill_ms = 0;
  double entering_ms = 0;        // produce + prefill of pages that entered after the first token
  Clock::time_point submitted, admitted, first_token, last_token;
  bool cancel = false;
  bool finished = false;

  explicit Active(const SamplingParams& p) : sampler(p) {}
  // The part prefill is in: a page entering a rolling reference, else the next reference part.
  const ReferencePart& prefill_part() const { return entering ? *entering : req.reference[part]; }
};

Scheduler::Scheduler(Decoder& decoder, KVBlockPool& pool, ThreadPool& threads, SchedulerOptions options)
    : dec_(decoder), pool_(pool), threads_(threads), opt_(options), own_prefix_(options.prefix_cache_bytes),
      prefix_(options.shared_prefix_cache ? *options.shared_prefix_cache : own_prefix_) {
  if (opt_.max_batch < 1) throw_invalid("scheduler: batch size must be at least 1, got " + std::to_string(opt_.max_batch));
  if (opt_.prefill_chunk < 1) throw_invalid("scheduler: prefill chunk must be at least 1, got " + std::to_string(opt_.prefill_chunk));
  if (opt_.max_queue < 1) throw_invalid("scheduler: the wait queue must hold at least 1 request");
  if (opt_.block_tokens < 1) throw_invalid("scheduler: KV block size must be at least 1");
  opt_.policy.rules().validate(opt_.policy);  // here, not at the first admission, where it would end no request
  counters_.kv_bytes_capacity = pool_.capacity_bytes();
  stats_ = counters_;
  if (!opt_.synchronous) thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::stop() {
  {
    std::lock_guard lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  else shut_down();  // synchronous: what is left ends here
}

size_t Scheduler::kv_bytes_needed(std::span<const int64_t> part_tokens, int64_t max_tokens, bool reference_offloaded) const {
  int64_t prompt_tokens = 0;
  for (int64_t n : part_tokens) prompt_tokens += n;
  // Generated tokens that are fed back (and so stored): all but the last, within the context.
  const int64_t fed = std::max<int64_t>(0, std::min(max_tokens - 1, dec_.config().max_positions - prompt_tokens));
  return KVFootprint::worst_case_bytes(pool_, opt_.policy, opt_.block_tokens, part_tokens, fed, reference_offloaded);
}

Submission Scheduler::submit(SequenceRequest r) {
  const ModelConfig& cfg = dec_.config();
  if (r.reference.empty()) {
    if (!r.prompt.empty()) r.reference.push_back(ReferencePart::tokens(r.prompt));
  } else {
    if (!r.prompt.empty()) throw_invalid("a request gives its reference either as prompt ids or as parts, not both");
    for (size_t i = 0; i < r.reference.size(); ++i) {
      const ReferencePart& part = r.reference[i];
      if (part.ids.empty()) throw_invalid("reference part " + std::to_string(i + 1) + " is empty");
      r.prompt.insert(r.prompt.end(), part.ids.begin(), part.ids.end());
    }
  }
  const int64_t P = static_cast<int64_t>(r.prompt.size());
  if (P == 0) throw_invalid("the prompt is empty: at least one token is needed");
  if (P >= cfg.max_positions)
    throw_invalid("the prompt has " + std::to_string(P) + " tokens but the model's context is " + std::to_string(cfg.max_positions) +
                  " (room is needed for at least one generated token)");
  // Ids that are fed must be in the vocabulary; an embedding part's ids are only the guard's history.
  for (const ReferencePart& part : r.reference)
    if (!part.is_embedding())
      for (int32_t t : part.ids)
        if (t < 0 || t >= cfg.vocab)
          throw_invalid("prompt token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(cfg.vocab) + ")");
  if (r.max_tokens < 0) throw_invalid("max tokens must not be negative, got " + std::to_string(r.max_tokens));
  Sampler validate_sampling(r.sampling);  // throws for bad sampling parameters
  if (r.no_repeat_ngram > 0) NoRepeatNGram validate_guard(r.no_repeat_ngram, r.no_repeat_window);
  if (r.rolling && !opt_.policy.rolls())
    throw_invalid("a rolling reference needs the rolling KV policy, not " + opt_.policy.name());
  if (r.rolling_page_tokens < 0) throw_invalid("rolling page tokens must not be negative");
  if (!r.reference_store) r.reference_store = opt_.reference_store;
  if (r.reference_store && prefix_.enabled()) throw_invalid("a reference store does not combine with the prefix cache");
  std::vector<int64_t> part_tokens;
  int64_t largest_page = r.rolling_page_tokens;
  for (const ReferencePart& part : r.reference)
    if (r.rolling && part.page) largest_page = std::max(largest_page, static_cast<int64_t>(part.ids.size()));
  // Rolling: a page that enters takes the place of one that left, and may be as large as any.
  for (const ReferencePart& part : r.reference)
    part_tokens.push_back(r.rolling && part.page ? largest_page : static_cast<int64_t>(part.ids.size()));
  const size_t need = kv_bytes_needed(part_tokens, r.max_tokens, r.reference_store != nullptr);
  // Hashing the parts here keeps it off the scheduler thread.
  std::vector<std::string> keys;
  if (prefix_.enabled() && opt_.policy.reference_reusable()) keys = prefix_keys(r.reference);

  Submission s;
  {
    std::lock_guard lk(mu_);
    if (stop_) {
      s.rejected = Rejection::Stopped;
      s.message = "the server is shutting down";
      return s;
    }
    if (opt_.reserve_worst_case && pool_.capacity_bytes() > 0 && need > pool_.capacity_bytes()) {
      s.rejected = Rejection::ExceedsKVBudget;
      s.message = "the request needs up to " + std::to_string(need) + " KV bytes (" + std::to_string(P) + " prompt tokens, " +
                  std::to_string(r.max_tokens) + " output tokens) but the KV budget is " + std::to_string(pool_.capacity_bytes()) +
                  " bytes";
      return s;
    }
    if (waiting_.size() >= opt_.max_queue) {
      s.rejected = Rejection::QueueFull;
      s.message = "the wait queue is full (" + std::to_string(opt_.max_queue) + " requests)";
      return s;
    }
    s.id = next_id_++;
    waiting_.push_back({s.id, std::move(r), need, Clock::now(), std::move(keys)});
    stats_.queued = static_cast<int64_t>(waiting_.size());
  }
  cv_.notify_all();
  return s;
}

void Scheduler::cancel(RequestId id) {
  {
    std::lock_guard lk(mu_);
    cancels_.insert(id);
  }
  cv_.notify_all();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  {
    std::lock_guard lk(mu_);
    s = stats_;
  }
  if (opt_.reference_store) s.reference_store = opt_.reference_store->stats();
  return s;
}

void Scheduler::finish(Active& a, StopReason reason, const std::string& error, std::vector<Done>& done,
                       std::exception_ptr exception) {
  if (a.finished) return;
  a.finished = true;
  SequenceResult r;
  if (a.kv) {
    keep_prefix(a);
    r.reference_tokens = a.kv->reference_length();
    r.kv_bytes_final = a.kv->bytes();
  }
  a.kv.reset();  // releases every block of the sequence now
  r.id = a.id;
  r.stop_reason = reason;
  r.error = error;
  r.exception = std::move(exception);
  r.tokens = std::move(a.tokens);
  r.predicted = std::move(a.predicted);
  r.prompt_tokens = static_cast<int64_t>(a.req.prompt.size());
  r.cached_prompt_tokens = a.cached_tokens;
  r.queue_ms = ms_between(a.submitted, a.admitted);
  if (!r.tokens.empty()) {
    r.ttft_ms = ms_between(a.submitted, a.first_token);
    r.decode_ms = ms_between(a.first_token, a.last_token) - a.entering_ms;
  }
  r.produce_ms = a.produce_ms;
  r.prefill_ms = a.prefill_ms;
  r.kv_bytes_peak = a.peak;
  r.kv_active_bytes_max = a.active_max;
  r.kv_offloaded_bytes_peak = a.offloaded_peak;
  done.push_back({std::move(a.req.on_done), std::move(r)});
}

Scheduler::Done& Scheduler::end_waiting(Waiting& w, StopReason reason, const std::string& error, std::vector<Done>& done) {
  SequenceResult r;
  r.id = w.id;
  r.stop_reason = reason;
  r.error = error;
  r.prompt_tokens = static_cast<int64_t>(w.req.prompt.size());
  done.push_back({std::move(w.req.on_done), std::move(r)});
  return done.back();
}

void Scheduler::admit(std::vector<Done>& done) {
  std::lock_guard lk(mu_);
  const auto now = Clock::now();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->req.deadline && now >= *it->req.deadline) {
      end_waiting(*it, StopReason::Timeout, "", done).result.queue_ms = ms_between(it->submitted, now);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // What running sequences may still claim on top of what they hold.
  size_t reserved = 0;
  for (const auto& a : running_) {
    const size_t held = pool_.bytes_for(a->id);
    reserved += a->need > held ? a->need - held : 0;
  }
  const size_t cap = pool_.capacity_bytes();
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < opt_.max_batch) {
    Waiting& w = waiting_.front();
    // First come, first served: a big request at the head is not overtaken (it would starve).
    if (opt_.reserve_worst_case && cap > 0 && pool_.bytes_in_use() + reserved + w.need > cap) break;
    auto a = std::make_unique<Active>(w.req.sampling);
    a->id = w.id;
    a->need = w.need;
    a->submitted = w.submitted;
    a->admitted = now;
    a->req = std::move(w.req);
    a->kv = std::make_unique<SequenceKV>(pool_, a->id, opt_.policy, opt_.block_tokens, a->req.reference_store);
    if (a->req.no_repeat_ngram > 0) a->guard.emplace(a->req.no_repeat_ngram, a->req.no_repeat_window);
    a->history = a->req.prompt;
    a->keys = std::move(w.keys);
    refocus(*a);
    reuse_prefix(*a);
    reserved += a->need;
    ++admissions_;
    running_.push_back(std::move(a));
    waiting_.pop_front();
  }
  // Visible at once, not only after the step: a long prefill must not leave it stale.
  stats_.queued = static_cast<int64_t>(waiting_.size());
  stats_.running = static_cast<int64_t>(running_.size());
}

void Scheduler::reap(std::vector<Done>& done) {
  const auto now = Clock::now();
  for (auto& a : running_) {
    if (a->cancel) finish(*a, StopReason::Cancelled, "", done);
    else if (a->req.deadline && now >= *a->req.deadline) finish(*a, StopReason::Timeout, "", done);
  }
  std::erase_if(running_, [](const auto& a) { return a->finished; });
}

void Scheduler::reuse_prefix(Active& a) {
  if (a.keys.empty()) return;
  const PrefixKVCache::Match m = prefix_.lookup(a.keys);
  size_t parts = m.parts;
  const size_t all = a.req.reference.size();
  // The first token needs the logits after the last part: the entry has them only if it ended
  // there too; otherwise the last part is prefilled again.
  bool whole = parts == all && parts == m.entry->keys.size() && !m.entry->logits.empty();
  if (parts == all && !whole) --parts;
  if (opt_.policy.compresses_reference()) {
    // The parts holding the observation window (the last policy.observe reference tokens) are
    // prefilled here: their queries choose what the compressed reference keeps, so a reused
    // reference is compressed exactly as a fresh one.
    size_t before_tail = all;
    for (int64_t tail = 0; before_tail > 0 && tail < opt_.policy.observe;)
      tail += static_cast<int64_t>(a.req.reference[--before_tail].ids.size());
    parts = std::min(parts, before_tail);
    whole = whole && parts == all;
  }
  int64_t tokens = 0;
  if (parts > 0) {
    tokens = m.entry->kv->tokens(parts);
    // Admission reserved this sequence's worst case, which covers these segments.
    a.kv->restore(*m.entry->kv, parts);
    a.part = parts;
    a.prefilled = tokens;
    a.cached_tokens = tokens;
    if (whole) a.pending_logits = m.entry->logits;
  }
  prefix_.record(parts, tokens, true);
}

void Scheduler::refocus(Active& a) {
  if (!opt_.policy.focuses_pages() || a.req.page_separator < 0) return;
  a.kv->sparse().set_focus(focus_segments(a.req.reference, a.page_now, opt_.policy));
  a.kv->sparse().set_candidates(neighbour_segments(a.req.reference, a.page_now, opt_.policy));
}

void Scheduler::keep_prefix(Active& a) {
  const auto P = static_cast<int64_t>(a.req.prompt.size());
  if (a.keys.empty() || a.prefilled < P) return;
  // One segment per part; a quantised segment can be copied once it is closed.
  const size_t n = std::min(a.keys.size(), a.kv->snapshot_segments());
  if (n == 0 || a.kv->segment_count() != a.req.reference.size()) return;
  const bool whole = n == a.req.reference.size() && !a.final_logits.empty();
  std::vector<std::string> keys(a.keys.begin(), a.keys.begin() + static_cast<std::ptrdiff_t>(n));
  if (prefix_.contains(keys, whole)) return;
  PrefixKVCache::Entry e;
  e.keys = std::move(keys);
  e.kv = std::make_shared<const ReferenceSnapshot>(a.kv->snapshot(n));
  if (whole) e.logits = std::move(a.final_logits);
  if (opt_.on_prefix_kept) opt_.on_prefix_kept(e);
  prefix_.insert(std::move(e));
}

void Scheduler::offer_prefix(PrefixKVCache::Entry entry) {
  std::lock_guard lk(mu_);
  if (prefix_.enabled()) offered_.push_back(std::move(entry));
}

void Scheduler::adopt_offered(std::vector<PrefixKVCache::Entry>& offered) {
  const int64_t block_tokens = KVFootprint(pool_, opt_.policy, opt_.block_tokens).block_tokens();
  for (PrefixKVCache::Entry& e : offered) {
    const bool kept = e.kv && prefix_entry_fits(e, pool_, block_tokens, dec_.config().vocab) && !prefix_.contains(e.keys, !e.logits.empty());
    prefix_.count_offer(kept);
    if (kept) prefix_.insert(std::move(e));
  }
  offered.clear();
}

std::string Scheduler::prefix_layout_id() const {
  const KVTypes& t = pool_.layout().types;
  return t.name() + "/rotated=" + (t.rotated ? "1" : "0") + "/block=" +
         std::to_string(KVFootprint(pool_, opt_.policy, opt_.block_tokens).block_tokens()) + "/" + opt_.policy.name() + ":" +
         std::to_string(opt_.policy.window) + ":" + std::to_string(opt_.policy.unit_tokens);
}

void Scheduler::take_token(Active& a, std::span<float> row, Clock::time_point at, std::vector<Done>& done) {
  const ModelConfig& cfg = dec_.config();
  if (a.req.on_step && !a.tokens.empty()) a.req.on_step(*a.kv);
  if (a.req.on_logits) a.req.on_logits(row);
  if (a.req.constrain) a.req.constrain(row);
  if (a.guard) a.guard->apply(a.history, row);
  int32_t tok = a.sampler.sample(row);
  if (!a.req.teacher.empty()) {
    a.predicted.push_back(tok);
    tok = a.req.teacher[a.tokens.size()];
  }
  a.tokens.push_back(tok);
  if (a.guard) {
    a.history.push_back(tok);
    a.guard->trim(a.history);
  }
  counters_.generated_tokens++;
  if (a.tokens.size() == 1) a.first_token = at;
  a.last_token = at;
  if (a.req.on_token) a.req.on_token(tok);
  if (a.req.stop_at_eos && tok == cfg.eos_id) {
    finish(a, StopReason::Eos, "", done);
    return;
  }
  if (a.req.on_token && cancel_requested(a.id)) {
    finish(a, StopReason::Cancelled, "", done);
    return;
  }
  const size_t n = a.tokens.size();
  if (static_cast<int64_t>(n) >= a.req.max_tokens || (!a.req.teacher.empty() && n == a.req.teacher.size())) {
    finish(a, StopReason::Length, "", done);
    return;
  }
  if (tok == a.req.page_separator) {
    ++a.page_now;
    refocus(a);
  }
  if (a.req.rolling && tok == a.req.rolling->separator) {
    // The decoder has finished the oldest resident page: it leaves, the next one enters.
    if (!a.resident.empty()) {
      a.kv->drop_segment(a.resident.front());
      a.resident.pop_front();
    }
    std::optional<ReferencePart> page;
    if (a.req.rolling->next_page) {
      const auto t0 = Clock::now();
      page = a.req.rolling->next_page();  // reads (encodes) the page
      const double ms = ms_between(t0, Clock::now());
      a.produce_ms += ms;
      a.entering_ms += ms;
    }
    if (page) {
      if (page->ids.empty()) {
        finish(a, StopReason::Error, "rolling reference: an empty page entered", done);
        return;
      }
      a.entering = std::move(page);
      return;  // the context is checked once it is in
    }
  }
  if (a.kv->length() + 1 > cfg.max_positions) finish(a, StopReason::Context, "", done);
}

void Scheduler::take_cached_first_tokens(std::vector<Done>& done) {
  // Sequences whose whole reference came from the prefix cache take their first token from the
  // cached logits, then decode in this step like the others.
  for (auto& ap : running_) {
    Active& a = *ap;
    if (a.pending_logits.empty()) continue;
    std::vector<float> row = std::move(a.pending_logits);
    a.pending_logits.clear();
    if (a.req.max_tokens == 0) finish(a, StopReason::Length, "", done);
    else take_token(a, row, Clock::now(), done);
  }
}

// The next chunk of `a`'s reference (at most `budget` rows, never across a part): its embedding
// rows produced when prefill reaches the part, so they live only while they are prefilled.
Decoder::Input Scheduler::prefill_input(Active& a, int64_t budget) {
  const int64_t hidden = dec_.config().hidden;
  const ReferencePart& part = a.prefill_part();
  const int64_t rows = static_cast<int64_t>(part.ids.size());
  if (part.is_embedding() && !a.rows_ready) {
    const auto t0 = Clock::now();
    a.rows = part.embeddings();
    const double ms = ms_between(t0, Clock::now());
    a.produce_ms += ms;
    if (a.entering) a.entering_ms += ms;
    if (static_cast<int64_t>(a.rows.size()) != rows * hidden)
      throw Error(Error::Kind::Internal, "reference part " + std::to_string(a.entering ? a.req.reference.size() + 1 : a.part + 1) +
                                             " produced " + std::to_string(a.rows.size()) + " values, expected " +
                                             std::to_string(rows) + " rows of " + std::to_string(hidden));
    a.rows_ready = true;
  }
  if (a.part_offset == 0) begin_reference_part(*a.kv, part);
  const int64_t n = std::min(rows - a.part_offset, budget);
  Decoder::Input in;
  in.kv = a.kv.get();
  in.reference = true;
  if (part.is_embedding()) {
    in.embeddings = a.rows.data() + a.part_offset * hidden;
    in.n_embeddings = n;
  } else {
    in.tokens = std::span<const int32_t>(part.ids.data() + a.part_offset, static_cast<size_t>(n));
  }
  return in;
}

// The last generated token fed back: by id, or as the row the request's embed_token writes.
Decoder::Input Scheduler::decode_input(Active& a) {
  Decoder::Input in;
  in.kv = a.kv.get();
  if (a.req.embed_token) {
    a.fed_row.resize(static_cast<size_t>(dec_.config().hidden));
    a.req.embed_token(a.tokens.back(), a.fed_row.data());
    in.embeddings = a.fed_row.data();
    in.n_embeddings = 1;
  } else {
    in.tokens = std::span<const int32_t>(&a.tokens.back(), 1);
  }
  return in;
}

Scheduler::Batch Scheduler::gather_batch(std::vector<Done>& done) {
  Batch b;
  int64_t budget = opt_.prefill_chunk;  // prompt rows in this step, over every prefilling sequence
  auto prefilling_now = [](const Active& a) { return a.entering || a.prefilled < static_cast<int64_t>(a.req.prompt.size()); };
  const bool hold_decode = opt_.prefill_before_decode &&
                           std::any_of(running_.begin(), running_.end(), [&](const auto& a) { return !a->finished && prefilling_now(*a); });
  for (auto& ap : running_) {
    Active& a = *ap;
    if (a.finished) continue;
    const bool prefilling = prefilling_now(a);
    if ((prefilling && budget == 0) || (!prefilling && hold_decode)) continue;
    // Batch-invariant chunks: a whole chunk (to the end of its part) or none, so a sequence's chunks
    // start where they start when it runs alone, whatever others took of this step's budget.
    if (prefilling && opt_.batch_invariant && budget < std::min(opt_.prefill_chunk, rows_left_in_part(a))) continue;
    try {
      const Decoder::Input in = prefilling ? prefill_input(a, budget) : decode_input(a);
      const int64_t n = prefilling ? (in.tokens.empty() ? in.n_embeddings : static_cast<int64_t>(in.tokens.size())) : 0;
      budget -= n;
      b.inputs.push_back(in);
      b.owners.push_back(&a);
      b.prefill.push_back(n);
    } catch (const std::exception& e) {
      // A producer or hook of this request failed: it ends alone, the batch goes on.
      finish(a, StopReason::Error, e.what(), done, std::current_exception());
    }
  }
  return b;
}

// After a forward pass that prefilled `n` rows of `a`: its place in the reference moves on. True
// when its reference is complete and the logits are its first token's.
bool Scheduler::advance_prefill(Active& a, int64_t n, std::span<const float> row, std::vector<Done>& done) {
  counters_.prompt_tokens += static_cast<uint64_t>(n);
  a.part_offset += n;
  const ReferencePart& part = a.prefill_part();
  const bool part_done = a.part_offset == static_cast<int64_t>(part.ids.size());
  if (part_done) {
    if (a.req.rolling && part.page) a.resident.push_back(a.kv->segment_count() - 1);
    a.part_offset = 0;
    a.rows = std::vector<float>();  // frees the part's rows
    a.rows_ready = false;
  }
  if (a.entering) {
    // A page entering a rolling reference: its logits are not used; once it is in, the separator
    // is fed back.
    if (part_done) {
      a.entering.reset();
      if (a.kv->length() + 1 > dec_.config().max_positions) finish(a, StopReason::Context, "", done);
    }
    return false;
  }
  a.prefilled += n;
  if (part_done) ++a.part;
  if (a.prefilled < static_cast<int64_t>(a.req.prompt.size())) return false;  // more prompt to go
  // What the first token is sampled from, for a later request with the same reference.
  if (a.keys.size() == a.req.reference.size()) a.final_logits.assign(row.begin(), row.end());
  // Kept now, not only when the sequence ends: a compressed reference cannot be copied once the
  // first generated token compresses it, and other replicas (on_prefix_kept) wait for this KV. A
  // quantised reference's last segment is still open here; it is kept whole at the end.
  if (opt_.policy.compresses_reference() || opt_.on_prefix_kept) keep_prefix(a);
  if (a.req.max_tokens == 0) {
    finish(a, StopReason::Length, "", done);
    return false;
  }
  return true;
}

int64_t Scheduler::rows_left_in_part(const Active& a) const {
  return static_cast<int64_t>(a.prefill_part().ids.size()) - a.part_offset;
}

// The forward passes of a step, as [begin, end) ranges of the batch. Batch-invariant: the decode
// inputs (moved to the front) in one pass on the GEMV path, then each prefill chunk in a pass of
// its own, so every row is computed as it is when its sequence runs alone. Otherwise one pass.
std::vector<std::pair<size_t, size_t>> Scheduler::plan_passes(Batch& b) const {
  if (!opt_.batch_invariant) return {{0, b.inputs.size()}};
  std::vector<size_t> order(b.inputs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return b.prefill[i] == 0; });
  Batch sorted;
  for (size_t i : order) {
    sorted.inputs.push_back(b.inputs[i]);
    sorted.owners.push_back(b.owners[i]);
    sorted.prefill.push_back(b.prefill[i]);
  }
  b = std::move(sorted);
  const size_t decoding = static_cast<size_t>(std::count(b.prefill.begin(), b.prefill.end(), int64_t{0}));
  std::vector<std::pair<size_t, size_t>> passes;
  if (decoding) passes.emplace_back(0, decoding);
  for (size_t i = decoding; i < b.inputs.size(); ++i) passes.emplace_back(i, i + 1);
  return passes;
}

void Scheduler::step(std::vector<Done>& done) {
  const size_t vocab = static_cast<size_t>(dec_.config().vocab);
  take_cached_first_tokens(done);
  Batch b = gather_batch(done);
  auto drop_finished = [&] { std::erase_if(running_, [](const auto& a) { return a->finished; }); };
  if (b.inputs.empty()) return drop_finished();
  logits_.resize(b.inputs.size() * vocab);
  std::vector<double> pass_ms(b.inputs.size(), 0.0);
  std::vector<uint8_t> failed(b.inputs.size(), 0);
  for (const auto& [first, last] : plan_passes(b)) {
    const bool decode_pass = b.prefill[first] == 0;
    const auto before = Clock::now();
    try {
      const kernels::RowInvariantScope scope(opt_.batch_invariant && decode_pass);
      dec_.forward(std::span(b.inputs).subspan(first, last - first), logits_.data() + first * vocab, threads_);
    } catch (const std::exception& e) {
      // Admission reserves every sequence's worst case, so this is a bug, a broken model or a pool
      // without reservation (reserve_worst_case off); the decoder rolled this pass's sequences back,
      // and their requests end with the error.
      for (size_t i = first; i < last; ++i) {
        finish(*b.owners[i], StopReason::Error, e.what(), done, std::current_exception());
        failed[i] = 1;
      }
      continue;
    }
    const double ms = ms_between(before, Clock::now());
    std::fill(pass_ms.begin() + first, pass_ms.begin() + last, ms);
    (decode_pass ? counters_.decode_forward_ms : counters_.prefill_forward_ms) += ms;
    counters_.steps++;
  }
  counters_.sequence_steps += b.inputs.size();
  counters_.max_batch_seen = std::max<int64_t>(counters_.max_batch_seen, static_cast<int64_t>(b.inputs.size()));
  const auto after = Clock::now();
  for (size_t i = 0; i < b.owners.size(); ++i) {
    if (failed[i]) continue;
    const double forward_ms = pass_ms[i];
    Active& a = *b.owners[i];
    a.peak = std::max(a.peak, a.kv->bytes());
    a.offloaded_peak = std::max(a.offloaded_peak, a.kv->offloaded_bytes());
    std::span<float> row(logits_.data() + i * vocab, vocab);
    if (b.prefill[i] > 0) {
      a.prefill_ms += forward_ms;
      if (a.entering) a.entering_ms += forward_ms;
      if (!advance_prefill(a, b.prefill[i], row, done)) continue;
    } else {
      a.active_max = std::max(a.active_max, a.kv->active_bytes(a.kv->length() - 1));
      // A compressed reference (--kv-keep) gave bytes back at the first generated token, and its
      // policy (rswa or sparse: windowed) holds all it will ever hold from then on: what it
      // reserves is what it holds, so admission counts the compressed size.
      if (opt_.policy.compresses_reference()) a.need = std::min(a.need, a.kv->bytes());
    }
    take_token(a, row, after, done);
  }
  drop_finished();
}

void Scheduler::publish_stats() {
  std::lock_guard lk(mu_);
  SchedulerStats s = counters_;
  s.running = static_cast<int64_t>(running_.size());
  s.queued = static_cast<int64_t>(waiting_.size());
  s.kv_bytes_in_use = pool_.bytes_in_use();
  s.kv_bytes_capacity = pool_.capacity_bytes();
  s.kv_bytes_peak = pool_.peak_bytes();
  s.prefix_cache = prefix_.stats();
  for (const auto& a : running_) {
    const size_t held = pool_.bytes_for(a->id);
    s.kv_bytes_reserved += a->need > held ? a->need - held : 0;
    s.reference_tokens += a->kv->reference_length();
    s.window_tokens += a->kv->cached_tokens() - a->kv->reference_length();
  }
  stats_ = s;
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !waiting_.empty() || !running_.empty() || !cancels_.empty(); });
      if (stop_) break;
    }
    iterate();
  }
  shut_down();
}

void Scheduler::run_until_idle() {
  if (!opt_.synchronous) throw Error(Error::Kind::Internal, "run_until_idle: the scheduler runs its own thread");
  for (;;) {
    {
      std::lock_guard lk(mu_);
      if (stop_ || (waiting_.empty() && running_.empty() && cancels_.empty())) return;
    }
    const bool idle = running_.empty();
    const uint64_t admitted = admissions_;
    iterate();
    std::vector<Done> done;
    {
      // Nothing was running, nothing was admitted and the head still waits: the pool cannot hold
      // it, and nothing here will free bytes (bytes held outside this scheduler).
      std::lock_guard lk(mu_);
      if (!idle || admissions_ != admitted || !running_.empty() || waiting_.empty()) continue;
      Waiting& w = waiting_.front();
      end_waiting(w, StopReason::Error, "the KV pool cannot hold the request's worst case (" + std::to_string(w.need) + " bytes)", done);
      waiting_.pop_front();
    }
    for (Done& d : done)
      if (d.cb) d.cb(d.result);
  }
}

bool Scheduler::cancel_requested(RequestId id) const {
  std::lock_guard lk(mu_);
  return cancels_.count(id) > 0;
}

void Scheduler::iterate() {
  std::vector<Done> done;
  std::set<RequestId> cancels;
  std::vector<PrefixKVCache::Entry> offered;
  {
    std::lock_guard lk(mu_);
    cancels.swap(cancels_);
    offered.swap(offered_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (cancels.count(it->id)) {
        end_waiting(*it, StopReason::Cancelled, "", done);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& a : running_)
    if (cancels.count(a->id)) a->cancel = true;
  adopt_offered(offered);  // before admission: a request offered with its KV finds it
  try {
    reap(done);  // before admission, so freed bytes count for newcomers
    admit(done);
    step(done);
  } catch (const std::exception& e) {
    // A callback or the sampler failed: end everything running rather than spin on it.
    for (auto& a : running_) finish(*a, StopReason::Error, e.what(), done, std::current_exception());
    running_.clear();
  }
  publish_stats();
  for (Done& d : done)
    if (d.cb) d.cb(d.result);
}

void Scheduler::shut_down() {
  // Stopping: everything still here is cancelled.
  std::vector<Done> done;
  for (auto& a : running_) finish(*a, StopReason::Cancelled, "", done);
  running_.clear();
  {
    std::lock_guard lk(mu_);
    for (Waiting& w : waiting_) {
      end_waiting(w, StopReason::Cancelled, "", done);
    }
    waiting_.clear();
  }
  publish_stats();
  for (Done& d : done)
    if (d.cb) d.cb(d.result);
}

}  // namespace folio
