#include "server/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace folio {

using nlohmann::json;

void LogprobRecorder::logits(std::span<const float> row) {
  row_.assign(row.begin(), row.end());
  const float mx = *std::max_element(row_.begin(), row_.end());
  double sum = 0;
  for (float v : row_) sum += std::exp(static_cast<double>(v) - mx);
  log_sum_ = mx + std::log(sum);
  best_.clear();
  if (top_ <= 0) return;
  std::vector<int32_t> ids(row_.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = std::min(static_cast<size_t>(top_), ids.size());
  auto better = [&](int32_t a, int32_t b) { return row_[a] != row_[b] ? row_[a] > row_[b] : a < b; };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), better);
  for (size_t i = 0; i < k; ++i) best_.push_back({ids[i], static_cast<float>(row_[ids[i]] - log_sum_)});
}

TokenLogprob LogprobRecorder::take(int32_t token) const {
  return {token, static_cast<float>(row_[static_cast<size_t>(token)] - log_sum_), best_};
}

namespace {

json byte_list(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

json chat_logprob_json(const TokenLogprob& t, const Tokenizer& tok) {
  auto entry = [&](int32_t id, float lp) {
    const std::string text = tok.decode(std::span<const int32_t>(&id, 1));
    return json{{"token", text}, {"logprob", lp}, {"bytes", byte_list(text)}};
  };
  json e = entry(t.token, t.logprob);
  e["top_logprobs"] = json::array();
  for (const auto& [id, lp] : t.top) e["top_logprobs"].push_back(entry(id, lp));
  return e;
}

json completion_logprobs_json(std::span<const TokenLogprob> ts, const Tokenizer& tok, size_t offset) {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const TokenLogprob& t : ts) {
    const std::string text = tok.decode(std::span<const int32_t>(&t.token, 1));
    out["tokens"].push_back(text);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[tok.decode(std::span<const int32_t>(&id, 1))] = lp;
    out["top_logprobs"].push_back(top);
    out["text_offset"].push_back(offset);
    offset += text.size();
  }
  return out;
}

}  // namespace folio
