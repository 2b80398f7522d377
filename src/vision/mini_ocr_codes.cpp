#include "vision/mini_ocr_codes.h"

#include <algorithm>

#include "core/tensor.h"
#include "kernels/cpu/matmul.h"

namespace folio {

namespace {

// y[o] = w[o, :] . x for a small matrix (one token at a time: not worth the thread pool).
void matvec(const TensorView& w, const float* x, float* y) {
  for (int64_t o = 0; o < w.shape[0]; ++o) y[o] = kernels::dot(x, w.row_ptr(o), w.dtype, w.shape[1]);
}

}  // namespace

void MiniOcrCursor::advance(int32_t token) {
  if (token == kMiniNewline) {
    ++pos_.row;
    pos_.ch = 0;
  } else if (token == kMiniPage) {
    ++pos_.page;
    pos_.row = pos_.ch = 0;
  } else {
    ++pos_.ch;
  }
}

MiniOcrCodes::MiniOcrCodes(const MiniOcrConfig& cfg, const TensorSource& w) : cfg_(cfg) {
  const int64_t d = cfg_.hidden;
  visual_w_ = &w.get("mini_ocr.visual_proj.weight", {d, cfg_.frame_hidden});
  visual_b_ = to_f32_vector(w.get("mini_ocr.visual_proj.bias", {d}));
  type_ = to_f32_vector(w.get("mini_ocr.type_embed.weight", {5, d}));
  row_ = to_f32_vector(w.get("mini_ocr.row_embed.weight", {cfg_.max_rows, d}));
  char_ = to_f32_vector(w.get("mini_ocr.char_embed.weight", {cfg_.max_chars, d}));
  page_ = to_f32_vector(w.get("mini_ocr.page_embed.weight", {cfg_.max_pages, d}));
}

void MiniOcrCodes::code(MiniOcrTokenType type, const MiniOcrPosition& pos, float* out) const {
  const int64_t d = cfg_.hidden;
  const float* t = type_.data() + static_cast<int64_t>(type) * d;
  const float* p = page_.data() + (std::max<int64_t>(pos.page, 0) % cfg_.page_code_period) * d;
  const float* r = row_.data() + std::clamp<int64_t>(pos.row, 0, cfg_.max_rows - 1) * d;
  const float* c = char_.data() + std::clamp<int64_t>(pos.ch, 0, cfg_.max_chars - 1) * d;
  // Summed in the trainer's order: ((type + row) + char) + page.
  for (int64_t i = 0; i < d; ++i) out[i] = t[i] + r[i] + c[i] + p[i];
}

void MiniOcrCodes::add_visual(const float* frame, float* out) const {
  std::vector<float> v(static_cast<size_t>(cfg_.hidden));
  matvec(*visual_w_, frame, v.data());
  for (int64_t i = 0; i < cfg_.hidden; ++i) out[i] += v[static_cast<size_t>(i)] + visual_b_[static_cast<size_t>(i)];
}

int64_t MiniOcrCodes::append_page(const std::vector<MiniOcrRow>& rows, int64_t page, bool last, std::vector<float>& out,
                                  std::vector<int64_t>* row_starts) const {
  const int64_t d = cfg_.hidden, fd = cfg_.frame_hidden;
  int64_t kept = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    if (!rows[r].emit_frame.empty()) kept = static_cast<int64_t>(r) + 1;
  int64_t n = 0;
  auto push = [&](MiniOcrTokenType type, MiniOcrPosition pos) {
    out.resize(out.size() + static_cast<size_t>(d));
    code(type, pos, out.data() + out.size() - d);
    ++n;
    return out.data() + out.size() - d;
  };
  for (int64_t r = 0; r < kept; ++r) {
    const MiniOcrRow& row = rows[static_cast<size_t>(r)];
    if (row_starts) row_starts->push_back(n);
    for (size_t j = 0; j < row.emit_frame.size(); ++j) {
      float* e = push(MiniOcrTokenType::Char, {page, r, static_cast<int64_t>(j)});
      add_visual(row.frames.data() + row.emit_frame[j] * fd, e);
    }
    push(MiniOcrTokenType::RowEnd, {page, r, static_cast<int64_t>(row.emit_frame.size())});
  }
  push(last ? MiniOcrTokenType::DocEnd : MiniOcrTokenType::PageEnd, {page, kept, 0});
  return n;
}

}  // namespace folio
