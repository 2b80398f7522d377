// NoRepeatNGram: the sliding-window n-gram repetition guard of the DeepSeek-OCR / Unlimited-OCR
// decoding recipes.
//
// Semantics, as implemented by the reference code (read for facts, not copied):
//  - deepseek-ai/DeepSeek-OCR, DeepSeek-OCR-master/DeepSeek-OCR-vllm/process/ngram_norepeat.py
//    (NoRepeatNGramLogitsProcessor; run_dpsk_ocr_*.py use ngram_size 20-40, window_size 50-90,
//    whitelist {128821, 128822} = <td>, </td>);
//  - moyuan10086/Unlimited-OCR-NPU, modeling_unlimitedocr.py (SlidingWindowNoRepeatNgramProcessor,
//    "aligned with SGLang DeepseekOCRNoRepeatNGramLogitProcessor"; the README recipe uses
//    no_repeat_ngram_size 35 with ngram_window 128 for one image and 1024 for multi-page, no
//    whitelist).
// Given the token sequence so far s[0..L) (which tokens: the caller's choice; Unlimited-OCR's
// transformers path and SGLang pass prompt + generated tokens, DeepSeek-OCR's vLLM processor only
// the generated ones):
//  - if L < n nothing is banned;
//  - the current prefix is the last n-1 tokens s[L-n+1..L);
//  - every n-gram s[i..i+n) with max(0, L - window) <= i <= L - n, i.e. lying wholly inside the
//    last `window` tokens, whose first n-1 tokens equal the current prefix has its last token
//    s[i+n-1] banned (logit set to -inf);
//  - whitelisted ids are never banned.
// For n == 1 the prefix is empty, so every token in the last `window` tokens is banned (the
// Unlimited-OCR / SGLang behaviour; DeepSeek-OCR's vLLM version bans nothing there because of a
// Python slice quirk, but it never used n == 1).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

namespace folio {

class NoRepeatNGram {
 public:
  // Throws InvalidInput if n < 1 or window < 1.
  NoRepeatNGram(int n, int window, std::vector<int32_t> whitelist = {});

  // Sets logits[t] = -inf for every banned token t. Throws InvalidInput if a banned id is
  // outside logits.
  void apply(std::span<const int32_t> tokens, std::span<float> logits) const;

  // Drops the front of a history that apply() can no longer see (it reads only the last `window`
  // tokens), so a long generation keeps a bounded history; amortised O(1) per token.
  void trim(std::vector<int32_t>& history) const;

  // The banned ids for `tokens`, ascending (what apply() sets to -inf).
  std::vector<int32_t> banned(std::span<const int32_t> tokens) const;

  int n() const { return n_; }
  int window() const { return window_; }

 private:
  int n_, window_;
  std::unordered_set<int32_t> whitelist_;
};

}  // namespace folio
