#include "text/tokenizer.h"

#include "text/utf8.h"

namespace folio {

Tokenizer::~Tokenizer() = default;

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, std::vector<int32_t> context)
    : tokenizer_(tokenizer), window_(std::move(context)), emitted_(window_.empty() ? 0 : tokenizer_.decode(window_).size()) {}

std::string StreamingDetokenizer::push(int32_t id) {
  window_.push_back(id);
  const std::string text = tokenizer_.decode(window_);
  const size_t complete = utf8_complete_prefix(text);
  std::string out;
  if (complete > emitted_) {
    out = text.substr(emitted_, complete - emitted_);
    emitted_ = complete;
  }
  if (complete == text.size() && window_.size() > 1) {
    // Nothing held back: restart the window at the last id. Its decoded length becomes the new
    // baseline, so a start-of-text rule applied to it now (e.g. a dropped prefix space) only
    // shifts the baseline, never the bytes of later tokens.
    window_.erase(window_.begin(), window_.end() - 1);
    emitted_ = tokenizer_.decode(window_).size();
  }
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out;
  if (!window_.empty()) {
    const std::string text = tokenizer_.decode(window_);
    if (text.size() > emitted_) out = text.substr(emitted_);
  }
  window_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace folio
