#include "text/no_repeat_ngram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace folio {

NoRepeatNGram::NoRepeatNGram(int n, int window, std::vector<int32_t> whitelist)
    : n_(n), window_(window), whitelist_(whitelist.begin(), whitelist.end()) {
  FOLIO_CHECK_INPUT(n >= 1, "no-repeat n-gram size must be >= 1, got " + std::to_string(n));
  FOLIO_CHECK_INPUT(window >= 1, "no-repeat n-gram window must be >= 1, got " + std::to_string(window));
}

std::vector<int32_t> NoRepeatNGram::banned(std::span<const int32_t> tokens) const {
  std::vector<int32_t> out;
  const size_t len = tokens.size(), n = static_cast<size_t>(n_);
  if (len < n) return out;
  const size_t start = len > static_cast<size_t>(window_) ? len - window_ : 0;
  const size_t last_start = len - n;  // inclusive
  const int32_t* prefix = tokens.data() + (len - (n - 1));
  for (size_t i = start; i <= last_start; ++i) {
    if (std::equal(prefix, prefix + (n - 1), tokens.data() + i)) out.push_back(tokens[i + n - 1]);
  }
  std::erase_if(out, [&](int32_t t) { return whitelist_.count(t) != 0; });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void NoRepeatNGram::apply(std::span<const int32_t> tokens, std::span<float> logits) const {
  for (int32_t t : banned(tokens)) {
    FOLIO_CHECK_INPUT(t >= 0 && static_cast<size_t>(t) < logits.size(),
                      "no-repeat n-gram: token id " + std::to_string(t) + " is outside the " +
                          std::to_string(logits.size()) + " logits");
    logits[t] = -INFINITY;
  }
}

void NoRepeatNGram::trim(std::vector<int32_t>& history) const {
  const size_t keep = static_cast<size_t>(window_) + static_cast<size_t>(n_);
  if (history.size() > 2 * keep) history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(keep));
}

}  // namespace folio
