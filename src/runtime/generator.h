// Generator: prefill a prompt into a fresh sequence, then decode token by token.
//
// The prompt (the reference) is prefilled in chunks so activations stay bounded for long
// references; every later token is a generated token, kept or evicted by the KV policy.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/kv_policy.h"
#include "model/decoder.h"
#include "text/sampler.h"

namespace folio {

struct GenerationOptions {
  KVPolicy policy;
  int64_t max_tokens = 256;      // generated tokens at most (EOS included)
  SamplingParams sampling;       // temperature 0 = greedy
  int no_repeat_ngram = 0;       // 0 = off; otherwise ban tokens completing a repeated n-gram
  int no_repeat_window = 128;    // looking back this many tokens (prompt + output)
  bool stop_at_eos = true;
  int64_t prefill_chunk = 512;   // reference tokens per forward pass
};

struct GenerationResult {
  std::vector<int32_t> tokens;   // generated ids (the EOS that stopped generation included)
  std::string stop_reason;       // "eos", "length", "context", "stopped"
  double prefill_ms = 0;
  double decode_ms = 0;
  size_t kv_bytes_peak = 0;      // this sequence's bytes in the pool, at its largest
};

class Generator {
 public:
  Generator(Decoder& decoder, KVBlockPool& pool, ThreadPool& threads) : dec_(decoder), pool_(pool), threads_(threads) {}

  // Validates options and prompt (non-empty, fits the context), prefills, decodes. on_token is
  // called for every generated token; returning false stops generation ("stopped").
  GenerationResult generate(const std::vector<int32_t>& prompt, const GenerationOptions& opt,
                            const std::function<bool(int32_t)>& on_token = {});

 private:
  Decoder& dec_;
  KVBlockPool& pool_;
  ThreadPool& threads_;
  SeqId next_id_ = 1;
};

}  // namespace folio
