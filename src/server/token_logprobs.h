// What OpenAI's `logprobs` report for each generated token: its log-probability under the model's
// distribution at that step (the log-softmax of the raw logits: temperature, top_p and the like do
// not change it, as vLLM reports by default) and the most likely tokens of that step with theirs.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace folio {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.f;
  std::vector<std::pair<int32_t, float>> top;  // most likely first (ties: lower id first)
};

// One sequence's log-probabilities, step by step: logits() on each step's logits, then take() with
// the token chosen from them. Used from the scheduler thread only (SequenceRequest's on_logits and
// on_token); not thread-safe.
class LogprobRecorder {
 public:
  // `top`: alternatives to report per token (0: the chosen token's alone).
  explicit LogprobRecorder(int top) : top_(top) {}
  void logits(std::span<const float> row);
  // The chosen token's log-probability and the step's best `top`. Precondition: logits() ran for
  // this step and `token` indexes its row.
  TokenLogprob take(int32_t token) const;

 private:
  int top_;
  std::vector<float> row_;  // the step's logits
  double log_sum_ = 0;      // log of the sum of exp(logits)
  std::vector<std::pair<int32_t, float>> best_;
};

// Chat's entry of `choices[i].logprobs.content` for one token: token (its text), logprob, bytes,
// top_logprobs.
nlohmann::json chat_logprob_json(const TokenLogprob& t, const Tokenizer& tok);
// The legacy /v1/completions `logprobs` of these tokens: tokens, token_logprobs, top_logprobs (one
// {text: logprob} object per token), text_offset (from `offset`, in bytes of the answer's text).
nlohmann::json completion_logprobs_json(std::span<const TokenLogprob> ts, const Tokenizer& tok, size_t offset);

}  // namespace folio
