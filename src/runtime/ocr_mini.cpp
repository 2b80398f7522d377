#include "runtime/ocr_mini.h"

#include <chrono>

#include "core/error.h"
#include "doc/gray_page.h"
#include "model/io/json_file.h"

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
  std::vector<float> code(static_cast<size_t>(d));
  rows.resize(rows.size() + static_cast<size_t>(d));
  float* bos = rows.data() + rows.size() - d;
  model_.decoder->embed(kMiniBos, bos);
  codes_->code(MiniOcrTokenType::Text, {}, code.data());
  for (int64_t i = 0; i < d; ++i) bos[i] += code[static_cast<size_t>(i)];

  OcrPass pass;
  const auto n = static_cast<int64_t>(rows.size()) / d;
  std::vector<int32_t> ids(static_cast<size_t>(n), kMiniBos);  // no n-gram guard reads them
  pass.reference.push_back(ReferencePart::rows(std::move(ids), std::move(rows)));
  auto cursor = std::make_shared<MiniOcrCursor>();
  Decoder* dec = model_.decoder.get();
  const MiniOcrCodes* codes = codes_.get();
  pass.generation.embed_token = [cursor, dec, codes, d](int32_t token, float* row) {
    cursor->advance(token);
    std::vector<float> c(static_cast<size_t>(d));
    dec->embed(token, row);
    codes->code(MiniOcrTokenType::Text, cursor->position(), c.data());
    for (int64_t i = 0; i < d; ++i) row[i] += c[static_cast<size_t>(i)];
  };
  pass.generation.no_repeat_ngram = 0;
  pass.generation.stop_at_eos = true;
  return pass;
}

std::vector<OcrPage> MiniOcrModel::parse(std::string_view text) const {
  std::vector<OcrPage> pages;
  while (true) {
    const size_t cut = text.find(kMiniPageMarker);
    std::string_view page = text.substr(0, cut);
    while (!page.empty() && (page.back() == '\n' || page.back() == ' ')) page.remove_suffix(1);
    OcrPage p;
    if (!page.empty()) p.blocks.push_back({"text", {}, std::string(page)});
    pages.push_back(std::move(p));
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + kMiniPageMarker.size());
  }
  return pages;
}

}  // namespace folio
