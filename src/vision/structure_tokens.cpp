#include "vision/structure_tokens.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tensor.h"

namespace folio {

namespace {

std::vector<float> table(const TensorSource& w, const std::string& name, int64_t cols, int64_t* rows) {
  const TensorView& t = w.get(name);
  FOLIO_CHECK_INPUT(t.shape.size() == 2 && t.shape[1] == cols && t.shape[0] > 0,
                    "tensor '" + name + "' in " + w.description() + " has shape " + shape_to_string(t.shape) +
                        ", expected [n, " + std::to_string(cols) + "]");
  if (rows) *rows = t.shape[0];
  return to_f32_vector(t);
}

void linear(const std::vector<float>& w, const std::vector<float>& b, const float* x, int64_t in, int64_t out, float* y) {
  for (int64_t o = 0; o < out; ++o) {
    double s = b[static_cast<size_t>(o)];
    for (int64_t i = 0; i < in; ++i) s += double(w[static_cast<size_t>(o * in + i)]) * x[i];
    y[o] = static_cast<float>(s);
  }
}

}  // namespace

StructureTokens::StructureTokens(const TensorSource& w, int64_t hidden, int64_t char_classes, const std::string& p)
    : hidden_(hidden), classes_(char_classes) {
  w0_ = to_f32_vector(w.get(p + "line_proj.0.weight", {hidden, kLineNumeric}));
  b0_ = to_f32_vector(w.get(p + "line_proj.0.bias", {hidden}));
  w1_ = to_f32_vector(w.get(p + "line_proj.2.weight", {hidden, hidden}));
  b1_ = to_f32_vector(w.get(p + "line_proj.2.bias", {hidden}));
  chars_ = to_f32_vector(w.get(p + "char_embed.weight", {kCharSlots * char_classes, hidden}));
  types_ = to_f32_vector(w.get(p + "type_embed.weight", {4, hidden}));
  pages_ = table(w, p + "page_embed.weight", hidden, &max_pages_);
  lines_ = table(w, p + "line_embed.weight", hidden, &max_lines_);
}

void StructureTokens::line_token(const LineFeatures& f, float* out) const {
  std::vector<float> h(static_cast<size_t>(hidden_));
  linear(w0_, b0_, f.numeric.data(), kLineNumeric, hidden_, h.data());
  for (float& v : h) v = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));  // torch's exact GELU
  linear(w1_, b1_, h.data(), hidden_, hidden_, out);
  for (int s = 0; s < kCharSlots; ++s) {
    const int64_t c = std::clamp<int64_t>(f.chars[static_cast<size_t>(s)], 0, classes_ - 1);
    const float* e = chars_.data() + (s * classes_ + c) * hidden_;
    for (int64_t i = 0; i < hidden_; ++i) out[i] += e[i];
  }
}

void StructureTokens::add_code(StructureTokenType type, int64_t page, int64_t line, float* out) const {
  const float* t = types_.data() + static_cast<int64_t>(type) * hidden_;
  const float* pg = pages_.data() + (page % max_pages_) * hidden_;
  const float* ln = lines_.data() + std::min(line, max_lines_ - 1) * hidden_;
  for (int64_t i = 0; i < hidden_; ++i) out[i] += t[i] + pg[i] + ln[i];
}

}  // namespace folio
