#include "runtime/ocr_unlimited.h"

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "doc/ocr_prompt.h"
#include "vision/image_assembly.h"
#include "vision/mmproj.h"

namespace folio {

namespace {

// Side of the encoder's output grid for a size x size view: patches, then the stride-2 3x3
// convolutions (padding 1) of SAM's net_2 / net_3.
int64_t output_side(const VisionConfig& v, int64_t size) {
  int64_t g = size / v.sam_patch;
  for (size_t i = 0; i < v.sam_downsample.size(); ++i) g = (g - 1) / 2 + 1;
  return g;
}

}  // namespace

std::unique_ptr<UnlimitedOcrModel> UnlimitedOcrModel::load(const std::string& dir, const std::string& weights) {
  std::unique_ptr<UnlimitedOcrModel> m(new UnlimitedOcrModel());
  // Cheap checks first, so a missing file is named before gigabytes are mapped.
  const std::filesystem::path d(dir);
  if (!std::filesystem::exists(d / "tokenizer.json")) throw_invalid("model directory '" + dir + "' has no tokenizer.json");
  m->model_ = load_model(dir, true, weights);
  if (m->model_.config.arch != Arch::DeepseekV2)
    throw_invalid("model '" + dir + "' is a " + m->model_.config.arch_name() + " decoder, not Unlimited-OCR's deepseek_v2");
  m->attach_encoder(VisionConfig::from_hf_file((d / "config.json").string()), *m->model_.weights, "config.json of '" + dir + "'");
  return m;
}

std::unique_ptr<UnlimitedOcrModel> UnlimitedOcrModel::load_gguf(const std::string& text_gguf, const std::string& mmproj,
                                                                const std::string& weights) {
  std::unique_ptr<UnlimitedOcrModel> m(new UnlimitedOcrModel());
  auto vision = MmprojSource::open(mmproj);  // small: checked before the text model is mapped
  m->model_ = load_model(text_gguf, true, weights);
  if (m->model_.config.arch != Arch::DeepseekV2)
    throw_invalid("model '" + text_gguf + "' is a " + m->model_.config.arch_name() + " decoder, not Unlimited-OCR's deepseek_v2");
  const VisionConfig vcfg = vision->config();
  m->mmproj_ = std::move(vision);
  m->attach_encoder(vcfg, *m->mmproj_, "mmproj '" + mmproj + "' (for '" + text_gguf + "')");
  return m;
}

void UnlimitedOcrModel::attach_encoder(const VisionConfig& vcfg, const TensorSource& vision, const std::string& where) {
  if (vcfg.n_embed != model_.config.hidden)
    throw_invalid(where + ": projector width " + std::to_string(vcfg.n_embed) + " differs from the decoder's hidden size " +
                  std::to_string(model_.config.hidden));
  encoder_ = std::make_unique<DeepEncoder>(vcfg, vision);
  global_side_ = output_side(vcfg, kGlobalViewSide);
  tile_side_ = output_side(vcfg, kTileSide);
}

const char* UnlimitedOcrModel::encoder_precision() const { return kernels::gemm_precision_name(encoder_->precision()); }
const char* UnlimitedOcrModel::prefill_precision() const {
  return kernels::gemm_precision_name(model_.decoder->prefill_precision());
}

int64_t UnlimitedOcrModel::image_tokens(int width, int height, VisionMode mode) const {
  const TileGrid g = mode == VisionMode::Gundam ? select_tile_grid(width, height) : TileGrid{};
  return image_token_count(global_side_, tile_side_, TileLayout{g.cols, g.rows}, g.has_tiles());
}

int64_t UnlimitedOcrModel::image_tokens(const OcrPages& pages, size_t i, VisionMode mode) const {
  const OcrPageRef& p = pages.page(i);
  return image_tokens(p.width, p.height, mode);
}

std::vector<float> UnlimitedOcrModel::encode_page(const RgbImage& page, VisionMode mode, ThreadPool& threads) const {
  const PagePixels px = preprocess_page(page, mode);
  const ViewFeatures global = encoder_->encode_view(px.global.data(), kGlobalViewSide, threads);
  std::vector<ViewFeatures> tiles;
  if (px.grid.has_tiles()) {
    const size_t tile_values = 3 * static_cast<size_t>(kTileSide) * kTileSide;
    for (int t = 0; t < px.grid.cols * px.grid.rows; ++t)
      tiles.push_back(encoder_->encode_view(px.tiles.data() + t * tile_values, kTileSide, threads));
  }
  return encoder_->assemble(global, tiles, TileLayout{px.grid.cols, px.grid.rows});
}

OcrPass UnlimitedOcrModel::prepare(const OcrPages& pages, size_t first, size_t count, VisionMode mode, ThreadPool& threads,
                                   const PageEncodedFn& on_encoded) {
  check_pass_pages(pages, first, count);
  FOLIO_CHECK_INPUT(count == 1 || mode == VisionMode::Base, "Gundam mode reads one page per pass (multi-page input is Base only)");
  std::vector<int64_t> per_page;
  for (size_t i = first; i < first + count; ++i) per_page.push_back(image_tokens(pages, i, mode));
  const OcrPrompt prompt = build_ocr_prompt(tokenizer(), per_page, default_ocr_prompt(count));

  OcrPass pass;
  auto ids = [&](int64_t from, int64_t to) {
    return std::vector<int32_t>(prompt.ids.begin() + from, prompt.ids.begin() + to);
  };
  pass.reference.push_back(ReferencePart::tokens(ids(0, prompt.pages.front().start)));
  for (size_t k = 0; k < count; ++k) {
    const ImageSpan& s = prompt.pages[k];
    const size_t page = first + k;
    pass.reference.push_back(ReferencePart::lazy(ids(s.start, s.start + s.count), [this, &pages, &threads, page, mode, on_encoded] {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<float> rows = encode_page(pages.render(page), mode, threads);
      if (on_encoded)
        on_encoded(page, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      return rows;
    }));
  }
  const int64_t tail = prompt.pages.back().start + prompt.pages.back().count;
  if (tail < static_cast<int64_t>(prompt.ids.size()))
    pass.reference.push_back(ReferencePart::tokens(ids(tail, static_cast<int64_t>(prompt.ids.size()))));
  pass.generation.no_repeat_ngram = kUnlimitedOcrNgram;
  pass.generation.no_repeat_window = count > 1 ? kUnlimitedOcrNgramWindowMulti : kUnlimitedOcrNgramWindowSingle;
  pass.generation.stop_at_eos = true;
  return pass;
}

}  // namespace folio
