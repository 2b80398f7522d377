#include "runtime/ocr_mini.h"

#include <chrono>

#include "core/error.h"
#include "doc/gray_page.h"
#include "io/json_file.h"
#include "runtime/ocr_accuracy.h"

namespace folio {

std::unique_ptr<MiniOcrModel> MiniOcrModel::load(const std::string& dir, const std::string& weights) {
  std::unique_ptr<MiniOcrModel> m(new MiniOcrModel());
  m->model_ = load_model(dir, true, weights);
  m->cfg_ = MiniOcrConfig::from_hf_json(read_json_file(dir + "/config.json"));
  FOLIO_CHECK_INPUT(!m->model_.config.rope, dir + "/config.json: the mini OCR decoder must have position_encoding \"none\"");
  FOLIO_CHECK_INPUT(m->model_.config.hidden == m->cfg_.hidden, dir + "/config.json: text_config.hidden_size disagrees");
  m->front_ = std::make_unique<MiniOcrFrontEnd>(m->cfg_, *m->model_.weights);
  m->codes_ = std::make_unique<MiniOcrCodes>(m->cfg_, *m->model_.weights);
  return m;
}

int64_t MiniOcrModel::image_tokens(const OcrPages&, size_t, VisionMode) const {
  return cfg_.rows * (cfg_.frames_per_row() + 1) + 2;
}

std::vector<MiniOcrRow> MiniOcrModel::read_page(const RgbImage& page, ThreadPool& threads) const {
  const std::vector<float> gray = gray_page(page, static_cast<int>(cfg_.image_width), static_cast<int>(cfg_.image_height));
  return front_->read_page(gray.data(), threads);
}

ReferencePart MiniOcrModel::page_part(const OcrPages& pages, size_t first, size_t k, size_t count, ThreadPool& threads,
                                      const PageEncodedFn& on_encoded) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> rows;
  std::vector<int64_t> row_starts;
  const int64_t n = codes_->append_page(read_page(pages.render(first + k), threads), static_cast<int64_t>(k), k + 1 == count,
                                        rows, &row_starts);
  if (on_encoded) on_encoded(first + k, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ReferencePart part = ReferencePart::rows(std::vector<int32_t>(static_cast<size_t>(n), kMiniBos), std::move(rows));
  part.page = true;  // no n-gram guard reads the ids
  // Each row is a unit of sparse attention: within a row page and row codes are constant, so a
  // unit's key bounds are tight where the lookup needs them.
  part.unit_starts = std::move(row_starts);
  return part;
}

void MiniOcrModel::finish_pass(OcrPass& pass) const {
  // <bos> closes the reference; it carries the position of the first character to write.
  const int64_t d = cfg_.hidden;
  std::vector<float> bos(static_cast<size_t>(d)), scratch(static_cast<size_t>(d));
  embed_text(kMiniBos, {}, bos.data(), scratch.data());
  pass.reference.push_back(ReferencePart::rows({kMiniBos}, std::move(bos)));
  // Each generated token goes back in with the position of the character after it.
  pass.generation.embed_token = [this, cursor = MiniOcrCursor(), scratch = std::move(scratch)](int32_t token, float* row) mutable {
    cursor.advance(token);
    embed_text(token, cursor.position(), row, scratch.data());
  };
  pass.generation.page_separator = kMiniPage;
  pass.generation.no_repeat_ngram = 0;
  pass.generation.stop_at_eos = true;
}

OcrPass MiniOcrModel::prepare(const OcrPages& pages, size_t first, size_t count, VisionMode, ThreadPool& threads,
                              const PageEncodedFn& on_encoded) {
  check_pass_pages(pages, first, count);
  // One part per page, so the KV cache sees pages as segments (sparse selects within them).
  OcrPass pass;
  for (size_t k = 0; k < count; ++k) pass.reference.push_back(page_part(pages, first, k, count, threads, on_encoded));
  finish_pass(pass);
  return pass;
}

OcrPass MiniOcrModel::prepare_rolling(const OcrPages& pages, size_t first, size_t count, size_t resident, VisionMode,
                                      ThreadPool& threads, const PageEncodedFn& on_encoded) {
  check_pass_pages(pages, first, count);
  FOLIO_CHECK_INPUT(resident >= 1 && static_cast<int64_t>(resident) < cfg_.page_code_period,
                    "rolling: resident pages must be between 1 and " + std::to_string(cfg_.page_code_period - 1) +
                        " (pages that share a page code must never be resident together), got " + std::to_string(resident));
  OcrPass pass;
  const size_t initial = std::min(resident, count);
  for (size_t k = 0; k < initial; ++k) pass.reference.push_back(page_part(pages, first, k, count, threads, on_encoded));
  finish_pass(pass);
  DecodingOptions::Rolling rolling;
  rolling.separator = kMiniPage;
  rolling.next_page = [this, &pages, &threads, on_encoded, first, count, next = initial]() mutable -> std::optional<ReferencePart> {
    if (next >= count) return std::nullopt;
    return page_part(pages, first, next++, count, threads, on_encoded);
  };
  pass.generation.rolling = std::move(rolling);
  return pass;
}

std::vector<OcrPage> MiniOcrModel::parse(std::string_view text) const {
  std::vector<OcrPage> pages;
  for (std::string& page : split_text_pages(text, kMiniPageMarker)) {
    OcrPage p;
    if (!page.empty()) p.blocks.push_back({"text", {}, std::move(page), "", ""});
    pages.push_back(std::move(p));
  }
  return pages;
}

void MiniOcrModel::embed_text(int32_t token, const MiniOcrPosition& pos, float* row, float* scratch) const {
  model_.decoder->embed(token, row);
  codes_->code(MiniOcrTokenType::Text, pos, scratch);
  for (int64_t i = 0; i < cfg_.hidden; ++i) row[i] += scratch[i];
}

}  // namespace folio
