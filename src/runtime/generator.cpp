#include "runtime/generator.h"

#include <exception>
#include <memory>
#include <optional>

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

GenerationResult generation_result(SequenceResult s) {
  if (s.stop_reason == "error") {
    if (s.exception) std::rethrow_exception(s.exception);
    throw Error(Error::Kind::Internal, s.error);
  }
  GenerationResult r;
  r.tokens = std::move(s.tokens);
  r.predicted = std::move(s.predicted);
  r.stop_reason = s.stop_reason == "cancelled" ? "stopped" : s.stop_reason;  // on_token said stop
  r.reference_tokens = s.reference_tokens;
  r.produce_ms = s.produce_ms;
  r.prefill_ms = s.prefill_ms;
  r.decode_ms = s.decode_ms;
  r.kv_bytes_peak = s.kv_bytes_peak;
  r.kv_active_bytes_max = s.kv_active_bytes_max;
  r.kv_offloaded_bytes_peak = s.kv_offloaded_bytes_peak;
  return r;
}

}  // namespace

GenerationResult Generator::generate(std::span<const ReferencePart> reference, const GenerationOptions& opt,
                                     const std::function<bool(int32_t)>& on_token) {
  SchedulerOptions so;
  so.policy = opt.policy;
  so.max_batch = 1;
  so.prefill_chunk = opt.prefill_chunk;
  so.synchronous = true;
  so.reserve_worst_case = false;  // the pool's capacity is a limit: OutOfMemory when it is reached
  Scheduler scheduler(dec_, pool_, threads_, so);
  SequenceRequest r = sequence_request(reference, opt);
  RequestId id = -1;
  std::optional<SequenceResult> out;
  if (on_token)
    r.on_token = [&](int32_t t) {
      if (!on_token(t)) scheduler.cancel(id);  // takes effect at once
    };
  r.on_done = [&](const SequenceResult& s) { out = s; };
  const Submission sub = scheduler.submit(std::move(r));
  if (!sub.accepted()) throw Error(Error::Kind::Internal, "generate: the scheduler refused the request: " + sub.message);
  id = sub.id;
  scheduler.run_until_idle();
  if (!out) throw Error(Error::Kind::Internal, "generate: the request did not finish");
  return generation_result(std::move(*out));
}

}  // namespace folio
