#include "runtime/generator.h"

#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"
#include "kv/sequence_kv.h"
#include "runtime/scheduler.h"

namespace folio {

GenerationResult Generator::generate(const std::vector<int32_t>& prompt, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  const ReferencePart part = ReferencePart::tokens(prompt);
  return generate(std::span<const ReferencePart>(&part, 1), opt, on_token);
}

namespace {

// The scheduler's request for a reference and generation options (the callbacks are the caller's).
SequenceRequest sequence_request(std::span<const ReferencePart> reference, const GenerationOptions& opt) {
  SequenceRequest r;
  static_cast<DecodingOptions&>(r) = opt;
  r.reference.assign(reference.begin(), reference.end());
  return r;
}

// A finished request's result as Generator reports it (an "error" result is thrown instead).
GenerationResult generation_result(SequenceResult s) {
  if (s.stop_reason == StopReason::Cancelled) s.stop_reason = StopReason::Stopped;  // on_token said stop
  return s;
}

// The scheduler's options for decoding items side by side on the caller's thread.
SchedulerOptions batch_options(const GenerationOptions& first, int64_t max_batch) {
  SchedulerOptions so;
  so.policy = first.policy;
  so.max_batch = max_batch;
  so.prefill_chunk = first.prefill_chunk;
  so.max_queue = static_cast<size_t>(max_batch);
  so.synchronous = true;
  so.reserve_worst_case = false;  // the pool's capacity is a limit: OutOfMemory when it is reached
  so.prefill_before_decode = true;
  return so;
}

}  // namespace

GenerationResult Generator::generate(std::span<const ReferencePart> reference, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  std::optional<GenerationResult> out;
  std::optional<BatchItem> item = BatchItem{reference, opt, on_token, [&out](const GenerationResult& r) { out = r; }};
  generate_fed([&item] { return std::exchange(item, std::nullopt); }, 1);
  if (!out) throw Error(Error::Kind::Internal, "generate: the request did not finish");
  return std::move(*out);
}

void Generator::generate_fed(const std::function<std::optional<BatchItem>()>& next, int64_t max_batch, SchedulerStats* stats) {
  if (max_batch < 1) throw_invalid("generate: at least one sequence at a time is needed, got " + std::to_string(max_batch));
  std::optional<BatchItem> first = next();
  if (!first) return;
  SchedulerOptions so = batch_options(first->options, max_batch);
  // Items with a reference store skip the prefix cache; whether later ones have one is not known
  // yet, so the first decides (the OCR pipeline gives every pass the same options).
  if (!first->options.reference_store) so.shared_prefix_cache = prefix_cache_.get();
  std::exception_ptr error;
  std::set<RequestId> live;  // submitted, not ended
  bool over = false;         // set before the scheduler ends what is left: no callbacks then
  Scheduler scheduler(dec_, pool_, threads_, so);
  struct MarkOver {
    bool& over;
    ~MarkOver() { over = true; }
  } mark_over{over};  // destroyed before the scheduler
  auto fail = [&](std::exception_ptr e) {
    if (!error) error = e;
    for (RequestId id : live) scheduler.cancel(id);
  };
  std::function<void()> top_up;
  auto submit = [&](BatchItem item) {
    auto held = std::make_shared<BatchItem>(std::move(item));
    auto id = std::make_shared<RequestId>(-1);
    SequenceRequest r = sequence_request(held->reference, held->options);
    if (held->on_token)
      r.on_token = [&scheduler, held, id](int32_t t) {
        if (!held->on_token(t)) scheduler.cancel(*id);  // takes effect at once
      };
    r.on_done = [&, held, id](const SequenceResult& s) {
      live.erase(*id);
      if (over || error) return;
      try {
        if (s.stop_reason == StopReason::Error)
          std::rethrow_exception(s.exception ? s.exception : std::make_exception_ptr(Error(Error::Kind::Internal, s.error)));
        if (held->on_done) held->on_done(generation_result(s));
        top_up();  // the place it leaves
      } catch (...) {
        fail(std::current_exception());
      }
    };
    const Submission sub = scheduler.submit(std::move(r));
    if (!sub.accepted()) throw Error(Error::Kind::Internal, "generate: the scheduler refused the request: " + sub.message);
    *id = sub.id;
    live.insert(sub.id);
  };
  top_up = [&] {
    while (!error && static_cast<int64_t>(live.size()) < max_batch) {
      std::optional<BatchItem> item = first ? std::exchange(first, std::nullopt) : next();
      if (!item) return;
      submit(std::move(*item));
    }
  };
  try {
    top_up();
  } catch (...) {
    fail(std::current_exception());
  }
  scheduler.run_until_idle();
  if (stats) *stats = scheduler.stats();
  if (error) std::rethrow_exception(error);
}

}  // namespace folio
