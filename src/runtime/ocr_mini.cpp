#include "runtime/ocr_mini.h"

#include <chrono>

#include "core/error.h"
#include "doc/gray_page.h"
#include "model/io/json_file.h"
#include "runtime/ocr_accuracy.h"

namespace folio {

std::unique_ptr<MiniOcrModel> MiniOcrModel::load(const std::string& dir) {
  std::unique_ptr<MiniOcrModel> m(new MiniOcrModel());
  m->model_ = load_model(dir);
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

OcrPass MiniOcrModel::prepare(const OcrPages& pages, size_t first, size_t count, VisionMode, ThreadPool& threads,
                              const PageEncodedFn& on_encoded) {
  FOLIO_CHECK_INPUT(count >= 1 && first + count <= pages.size(), "OCR pass: pages " + std::to_string(first + 1) + ".." +
                                                                     std::to_string(first + count) + " of " +
                                                                     std::to_string(pages.size()));
  const int64_t d = cfg_.hidden;
  std::vector<float> rows;
  for (size_t k = 0; k < count; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    codes_->append_page(read_page(pages.render(first + k), threads), static_cast<int64_t>(k), k + 1 == count, rows);
    if (on_encoded)
      on_encoded(first + k, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  // <bos> closes the reference; it carries the position of the first character to write.
  rows.resize(rows.size() + static_cast<size_t>(d));
  std::vector<float> scratch(static_cast<size_t>(d));
  embed_text(kMiniBos, {}, rows.data() + rows.size() - d, scratch.data());

  OcrPass pass;
  const auto n = static_cast<int64_t>(rows.size()) / d;
  std::vector<int32_t> ids(static_cast<size_t>(n), kMiniBos);  // no n-gram guard reads them
  pass.reference.push_back(ReferencePart::rows(std::move(ids), std::move(rows)));
  // Each generated token goes back in with the position of the character after it.
  pass.generation.embed_token = [this, cursor = MiniOcrCursor(), scratch = std::move(scratch)](int32_t token, float* row) mutable {
    cursor.advance(token);
    embed_text(token, cursor.position(), row, scratch.data());
  };
  pass.generation.no_repeat_ngram = 0;
  pass.generation.stop_at_eos = true;
  return pass;
}

std::vector<OcrPage> MiniOcrModel::parse(std::string_view text) const {
  std::vector<OcrPage> pages;
  for (std::string& page : split_text_pages(text, kMiniPageMarker)) {
    OcrPage p;
    if (!page.empty()) p.blocks.push_back({"text", {}, std::move(page)});
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
