// The OCR pipeline on a tiny random Unlimited-OCR checkpoint (written by make-model's factory):
// its tokens equal an independent composition of the library calls (render, preprocess, encode,
// assemble, prompt layout, decoder, n-gram guard) for 1 and 2 pages in Base and Gundam mode;
// rswa equals full before the window fills; KV bytes stay flat under rswa after it fills.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "doc/image.h"
#include "doc/ocr_prompt.h"
#include "doc/pdf_document.h"
#include "doc/preprocess.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "vision/image_assembly.h"
#include "runtime/model_factory.h"
#include "runtime/ocr_model.h"
#include "kernels/cpu/cpu_features.h"
#include "runtime/ocr_passes_in_flight.h"
#include "runtime/ocr_pipeline.h"
#include "runtime/ocr_unlimited.h"
#include "test_png.h"
#include "text/no_repeat_ngram.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

const std::string kPdf = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/doc/two_pages.pdf";
constexpr double kDpi = 50;

struct Fixture {
  fs::path dir;
  std::unique_ptr<OcrModel> model;
  std::string png_wide;  // 1000 x 500: Gundam cuts it into 2 x 1 tiles of 640
  Fixture() {
    dir = fs::temp_directory_path() / ("folio_ocr_pipeline_test_" + std::to_string(getpid()));
    fs::create_directories(dir);
    write_random_checkpoint(preset_config("unlimited-ocr", "tiny"), preset_vision_config("unlimited-ocr", "tiny"),
                            (dir / "model").string(), 5, DType::F32);
    model = load_ocr_model((dir / "model").string());
    png_wide = (dir / "wide.png").string();
    testing::write_png(png_wide, 1000, 500, testing::test_page_rgb(1000, 500, 1));
  }
  ~Fixture() { fs::remove_all(dir); }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

// Everything the pipeline does, spelled out with the library calls, for one pass of pages.
std::vector<int32_t> independent_run(const std::vector<RgbImage>& pages, VisionMode mode, KVPolicy policy, int64_t max_tokens) {
  auto& m = dynamic_cast<UnlimitedOcrModel&>(*fx().model);
  const DeepEncoder& enc = m.encoder();
  Decoder& dec = m.decoder();
  const int64_t H = dec.config().hidden;
  ThreadPool threads(1);

  std::vector<std::vector<float>> page_rows;
  std::vector<int64_t> counts;
  for (const RgbImage& img : pages) {
    PagePixels px = preprocess_page(img, mode);
    ViewFeatures g = enc.encode_view(px.global.data(), 1024, threads);
    std::vector<ViewFeatures> tiles;
    for (int t = 0; t < px.grid.cols * px.grid.rows && px.grid.has_tiles(); ++t)
      tiles.push_back(enc.encode_view(px.tiles.data() + static_cast<size_t>(t) * 3 * 640 * 640, 640, threads));
    page_rows.push_back(enc.assemble(g, tiles, TileLayout{px.grid.cols, px.grid.rows}));
    counts.push_back(static_cast<int64_t>(page_rows.back().size()) / H);
    EXPECT_EQ(counts.back(), px.image_tokens());  // the doc layer's count agrees with the encoder
  }
  const bool multi = pages.size() > 1;
  OcrPrompt prompt = build_ocr_prompt(m.tokenizer(), counts, multi ? "<image>Multi page parsing." : "<image>document parsing.");

  std::vector<float> ref(prompt.ids.size() * static_cast<size_t>(H));
  for (size_t i = 0; i < prompt.ids.size(); ++i) dec.embed(prompt.ids[i], ref.data() + i * H);
  for (size_t p = 0; p < pages.size(); ++p)
    std::copy(page_rows[p].begin(), page_rows[p].end(), ref.begin() + prompt.pages[p].start * H);

  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(pool, 1, policy);
  std::vector<float> logits(static_cast<size_t>(dec.config().vocab));
  Decoder::Input in;
  in.kv = &kv;
  in.embeddings = ref.data();
  in.n_embeddings = static_cast<int64_t>(prompt.ids.size());
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), threads);
  NoRepeatNGram guard(35, multi ? 1024 : 128);  // the official recipe
  std::vector<int32_t> history = prompt.ids, out;
  for (int64_t s = 0; s < max_tokens; ++s) {
    guard.apply(history, logits);
    const int32_t t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    history.push_back(t);
    if (t == dec.config().eos_id || s + 1 == max_tokens) break;
    Decoder::Input step;
    step.kv = &kv;
    step.tokens = std::span<const int32_t>(&out.back(), 1);
    dec.forward({&step, 1}, logits.data(), threads);
  }
  return out;
}

OcrOptions options(VisionMode mode, const std::string& policy, int64_t window, int64_t max_tokens) {
  OcrOptions o;
  o.mode = mode;
  o.policy = KVPolicy::parse(policy, window);
  o.kv_dtype = DType::F32;
  o.max_tokens = max_tokens;
  return o;
}

std::vector<RgbImage> pdf_pages(std::vector<int> idx) {
  PdfDocument d = PdfDocument::open(kPdf);
  std::vector<RgbImage> v;
  for (int i : idx) v.push_back(d.render_page(i, kDpi));
  return v;
}

TEST(OcrPipeline, OnePageBaseMatchesIndependentComposition) {
  ThreadPool threads(1);
  OcrPages pages = OcrPages::open({kPdf}, "2", kDpi);
  ASSERT_EQ(pages.size(), 1u);
  std::string streamed;
  OcrCallbacks cb;
  cb.on_text = [&](std::string_view s) { streamed += s; };
  OcrResult r = run_ocr(*fx().model, pages, options(VisionMode::Base, "rswa", 16, 24), threads, cb);
  EXPECT_EQ(r.tokens, independent_run(pdf_pages({1}), VisionMode::Base, KVPolicy::parse("rswa", 16), 24));
  EXPECT_EQ(r.stats.reference_tokens, 1 + 273 + static_cast<int64_t>(fx().model->tokenizer().encode("document parsing.").size()));
  EXPECT_EQ(r.stats.passes, 1u);
  // The stream is the decoded text (EOS left out), and the result's pages come from it.
  std::vector<int32_t> text_ids = r.tokens;
  std::erase(text_ids, fx().model->decoder().config().eos_id);
  EXPECT_EQ(streamed, fx().model->tokenizer().decode(text_ids));
  EXPECT_EQ(r.text, streamed);
  ASSERT_EQ(r.pages.size(), 1u);
  EXPECT_EQ(r.json["pages"][0]["width"], pages.page(0).width);
  EXPECT_EQ(r.json["pages"][0]["source_page"], 2);
  EXPECT_EQ(r.json["stats"]["decode_tokens"], static_cast<int64_t>(r.tokens.size()));
  // One sequence: every decode step streams one token's active weights (the first token comes
  // from the prefill's logits) and reads the whole reference plus at most the window.
  const Decoder& dec = fx().model->decoder();
  const int64_t steps = static_cast<int64_t>(r.tokens.size()) - 1;
  EXPECT_EQ(r.stats.decode_steps, steps);
  EXPECT_EQ(r.stats.decode_weight_bytes, static_cast<uint64_t>(steps) * dec.active_weight_bytes_per_token());
  const double ref_bytes = dec.kv_layout(DType::F32).reference_bytes_per_token() * static_cast<double>(r.stats.reference_tokens);
  EXPECT_GT(static_cast<double>(r.stats.decode_kv_bytes), static_cast<double>(steps) * ref_bytes);
  EXPECT_GT(r.json["stats"]["decode_read_gbs"].get<double>(), 0.0);
}

TEST(OcrPipeline, TwoPagesBaseMatchIndependentComposition) {
  ThreadPool threads(1);
  OcrPages pages = OcrPages::open({kPdf}, "", kDpi);
  ASSERT_EQ(pages.size(), 2u);
  size_t encoded = 0;
  OcrCallbacks cb;
  cb.on_progress = [&](const OcrProgress& p) { encoded = p.pages_encoded; };
  OcrResult r = run_ocr(*fx().model, pages, options(VisionMode::Base, "rswa", 16, 24), threads, cb);
  EXPECT_EQ(r.tokens, independent_run(pdf_pages({0, 1}), VisionMode::Base, KVPolicy::parse("rswa", 16), 24));
  EXPECT_EQ(r.stats.passes, 1u);  // both pages in one multi-page prompt
  EXPECT_EQ(r.stats.reference_tokens,
            1 + 2 * 273 + static_cast<int64_t>(fx().model->tokenizer().encode("Multi page parsing.").size()));
  EXPECT_EQ(encoded, 2u);
  EXPECT_EQ(r.pages.size(), 2u);  // always one per input page
  EXPECT_EQ(r.json["pages"].size(), 2u);
}

TEST(OcrPipeline, GundamPagesMatchIndependentComposition) {
  ThreadPool threads(1);
  // One page with tiles (1000 x 500 -> 2 x 1 tiles of 640), then two pages: Gundam reads each page
  // in its own single-page pass.
  OcrPages one = OcrPages::open({fx().png_wide}, "", kDpi);
  ASSERT_EQ(select_tile_grid(1000, 500), (TileGrid{2, 1}));
  OcrResult r1 = run_ocr(*fx().model, one, options(VisionMode::Gundam, "rswa", 16, 20), threads);
  const RgbImage wide = load_image(fx().png_wide);
  const auto want1 = independent_run({wide}, VisionMode::Gundam, KVPolicy::parse("rswa", 16), 20);
  EXPECT_EQ(r1.tokens, want1);
  EXPECT_EQ(r1.stats.reference_tokens - 1 - static_cast<int64_t>(fx().model->tokenizer().encode("document parsing.").size()),
            image_token_count(select_tile_grid(1000, 500)));

  OcrPages two = OcrPages::open({fx().png_wide, kPdf}, "1-2", kDpi);
  OcrResult r2 = run_ocr(*fx().model, two, options(VisionMode::Gundam, "rswa", 16, 20), threads);
  EXPECT_EQ(r2.stats.passes, 2u);
  std::vector<int32_t> want2 = want1;
  auto second = independent_run(pdf_pages({0}), VisionMode::Gundam, KVPolicy::parse("rswa", 16), 20);
  want2.insert(want2.end(), second.begin(), second.end());
  EXPECT_EQ(r2.tokens, want2);
  EXPECT_EQ(r2.pages.size(), 2u);
}

TEST(OcrPipeline, RswaEqualsFullUntilTheWindowFillsAndKeepsKvFlat) {
  ThreadPool threads(1);
  OcrPages pages = OcrPages::open({kPdf}, "1", kDpi);
  const int64_t W = 8, N = 40;
  auto run = [&](const std::string& policy, std::vector<size_t>& kv) {
    OcrCallbacks cb;
    cb.on_progress = [&](const OcrProgress& p) {
      if (p.tokens > static_cast<int64_t>(kv.size())) kv.push_back(p.kv_bytes);
    };
    OcrOptions o = options(VisionMode::Base, policy, W, N);
    o.no_repeat_ngram = 0;  // keep the comparison about attention only
    return run_ocr(*fx().model, pages, o, threads, cb);
  };
  std::vector<size_t> kv_rswa, kv_full;
  OcrResult rswa = run("rswa", kv_rswa), full = run("full", kv_full);
  ASSERT_EQ(rswa.tokens.size(), static_cast<size_t>(N)) << "the random model stopped early; pick another seed";
  // Token j is produced from a KV that holds j generated tokens; while j <= W nothing was evicted.
  for (int64_t j = 0; j <= W; ++j) EXPECT_EQ(rswa.tokens[j], full.tokens[j]) << "token " << j;
  // Independent of the engine's formula: each reference part (a KV segment) in its rows once
  // closed (blocks of B rows while it fills) + one ring of W rows, 2 (K, V) x layers x heads x
  // head_dim x 4 bytes (f32) per row.
  const ModelConfig& c = fx().model->decoder().config();
  const size_t row = 2 * static_cast<size_t>(c.n_layers * c.n_kv_heads * c.head_dim) * 4;
  const OcrPass pass = fx().model->prepare(pages, 0, 1, VisionMode::Base, threads, {});  // lazy: nothing encoded
  const int64_t B = kDefaultBlockTokens;
  int64_t P = 0, filling_peak = 0;
  for (const ReferencePart& part : pass.reference) {
    const auto n = static_cast<int64_t>(part.ids.size());
    filling_peak = std::max(filling_peak, P + (n + B - 1) / B * B);
    P += n;
  }
  ASSERT_EQ(P, rswa.stats.reference_tokens);
  const size_t flat = static_cast<size_t>(P + W) * row;
  ASSERT_EQ(kv_rswa.size(), static_cast<size_t>(N));
  // kv_rswa[j] is read when token j+1 arrives, i.e. with j generated tokens cached... (j fed back)
  for (size_t j = W; j < kv_rswa.size(); ++j) EXPECT_EQ(kv_rswa[j], flat) << "token " << j;
  EXPECT_EQ(rswa.stats.kv_bytes_peak, std::max(flat, static_cast<size_t>(filling_peak) * row));
  EXPECT_GT(kv_full.back(), flat);  // full keeps growing
  EXPECT_GT(full.stats.kv_bytes_decoding_max, rswa.stats.kv_bytes_decoding_max);
}

TEST(OcrPipeline, PassesSplitPagesAndRefuseWhatCannotFit) {
  auto& model = *fx().model;
  OcrPages pages = OcrPages::open({kPdf, fx().png_wide, kPdf}, "", kDpi);
  ASSERT_EQ(pages.size(), 5u);
  OcrOptions o = options(VisionMode::Base, "rswa", 16, 4);
  // Tiny context 8192: automatic passes keep the reference under half of it (14 pages of 273).
  EXPECT_EQ(plan_ocr_passes(model, pages, o), (std::vector<std::pair<size_t, size_t>>{{0, 5}}));
  o.pages_per_pass = 2;
  EXPECT_EQ(plan_ocr_passes(model, pages, o), (std::vector<std::pair<size_t, size_t>>{{0, 2}, {2, 2}, {4, 1}}));
  o.mode = VisionMode::Gundam;
  try {
    plan_ocr_passes(model, pages, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 1 page"), std::string::npos) << e.what();
  }
  ThreadPool threads(1);
  // The official recipe: n-gram 35 over 128 tokens for one page, 1024 for several.
  OcrPass single = model.prepare(pages, 1, 1, VisionMode::Gundam, threads, {});
  EXPECT_EQ(single.generation.no_repeat_ngram, 35);
  EXPECT_EQ(single.generation.no_repeat_window, 128);
  OcrPass multi = model.prepare(pages, 0, 3, VisionMode::Base, threads, {});
  EXPECT_EQ(multi.generation.no_repeat_ngram, 35);
  EXPECT_EQ(multi.generation.no_repeat_window, 1024);
  EXPECT_TRUE(multi.generation.stop_at_eos);
  ASSERT_EQ(multi.reference.size(), 5u);  // BOS + text, three lazy pages, text
  EXPECT_FALSE(multi.reference[0].is_embedding());
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(multi.reference[static_cast<size_t>(i)].ids, std::vector<int32_t>(273, 511));
  o = options(VisionMode::Base, "rswa", 16, 3);
  o.pages_per_pass = 2;
  OcrResult r = run_ocr(model, pages, o, threads);
  EXPECT_EQ(r.stats.passes, 3u);
  EXPECT_EQ(r.pages.size(), 5u);
  EXPECT_EQ(r.stats.decode_tokens, 9);
}

// Passes side by side (passes_in_flight > 1): the same tokens, text, pages and stream as one pass
// after another (three sequences per step: the GEMV path), with fewer forward passes' worth of time
// not asserted here (docs/benchmarks.md). Lazy pages are encoded during prefill, one pass at a time.
TEST(OcrPipeline, PassesSideBySideGiveTheSequentialResult) {
  auto& model = *fx().model;
  OcrPages pages = OcrPages::open({kPdf, fx().png_wide, kPdf}, "", kDpi);
  ThreadPool threads(2);
  OcrOptions o = options(VisionMode::Base, "rswa", 16, 12);
  o.pages_per_pass = 2;
  auto run = [&](size_t in_flight, std::string& streamed) {
    o.passes_in_flight = in_flight;
    OcrCallbacks cb;
    cb.on_text = [&](std::string_view s) { streamed.append(s); };
    return run_ocr(model, pages, o, threads, cb);
  };
  std::string s1, s3;
  const OcrResult one = run(1, s1), three = run(3, s3);
  EXPECT_EQ(three.stats.passes, 3u);
  EXPECT_EQ(three.tokens, one.tokens);
  EXPECT_EQ(three.stats.pass_tokens, one.stats.pass_tokens);
  EXPECT_EQ(three.text, one.text);
  EXPECT_EQ(s3, s1);
  EXPECT_EQ(s3, three.text);
  EXPECT_EQ(three.markdown, one.markdown);
  EXPECT_EQ(three.stats.stop_reasons, one.stats.stop_reasons);
  o.passes_in_flight = 0;
  EXPECT_THROW(run_ocr(model, pages, o, threads), Error);
}

// The automatic count of passes side by side: the document's passes, at most 4 (8 with AMX int8
// tiles), at most what the memory given holds of the largest passes' KV bounds, 1 when streaming
// or under a KV budget; and the bound is one: a pass run alone holds no more (the pool's peak).
TEST(OcrPipeline, AutomaticPassesInFlightFitTheMemoryGiven) {
  auto& model = *fx().model;
  OcrPages pages = OcrPages::open({kPdf, kPdf, kPdf}, "", kDpi);  // six one-page passes
  ThreadPool threads(2);
  OcrOptions o = options(VisionMode::Base, "rswa", 16, 12);
  o.pages_per_pass = 1;
  size_t largest = 0;
  for (size_t i = 0; i < pages.size(); ++i) largest = std::max(largest, ocr_pass_kv_bound(model, pages, o, i, 1));
  const size_t most = kernels::int8_amx_active() ? 6 : 4;
  EXPECT_EQ(automatic_passes_in_flight(model, pages, o, false, SIZE_MAX), most);
  EXPECT_EQ(automatic_passes_in_flight(model, pages, o, false, 3 * largest), 3u);
  EXPECT_EQ(automatic_passes_in_flight(model, pages, o, false, 3 * largest - 1), 2u);
  EXPECT_EQ(automatic_passes_in_flight(model, pages, o, false, 0), 1u);
  EXPECT_EQ(automatic_passes_in_flight(model, pages, o, true, SIZE_MAX), 1u);
  OcrOptions budget = o;
  budget.kv_budget = size_t{64} << 20;
  EXPECT_EQ(automatic_passes_in_flight(model, pages, budget, false, SIZE_MAX), 1u);
  // Under the full policy the generated tokens count too.
  OcrOptions full = options(VisionMode::Base, "full", 16, 300);
  full.pages_per_pass = 1;
  EXPECT_GT(ocr_pass_kv_bound(model, pages, full, 0, 1), ocr_pass_kv_bound(model, pages, o, 0, 1));
  OcrOptions q8 = o;  // quantised KV: whole key groups and a staging block
  q8.kv_types = KVTypes::uniform(KVDType::Q8);
  OcrPages one = OcrPages::open({kPdf}, "1", kDpi);
  for (const OcrOptions& opt : {o, full, q8}) {
    const OcrResult r = run_ocr(model, one, opt, threads);
    EXPECT_GT(r.stats.kv_bytes_peak, 0u);
    EXPECT_LE(r.stats.kv_bytes_peak, ocr_pass_kv_bound(model, one, opt, 0, 1)) << opt.policy.name();
  }
}

// Kept reference KV (prefix_cache_bytes): a pass whose reference repeats an earlier pass's parts
// (here the same PDF twice, one page per pass) restores them instead of prefilling, and reads the
// same tokens as without it.
TEST(OcrPipeline, KeptReferenceKVIsRestoredByALaterPass) {
  auto& model = *fx().model;
  OcrPages pages = OcrPages::open({kPdf, kPdf}, "", kDpi);
  ThreadPool threads(2);
  OcrOptions o = options(VisionMode::Base, "rswa", 16, 12);
  o.pages_per_pass = 1;
  const OcrResult plain = run_ocr(model, pages, o, threads);
  o.prefix_cache_bytes = size_t{64} << 20;
  const OcrResult kept = run_ocr(model, pages, o, threads);
  ASSERT_EQ(kept.stats.passes, pages.size());  // the PDF's pages, twice
  EXPECT_EQ(plain.stats.cached_reference_tokens, 0);
  // The repeated passes restore all of their reference; a new page's pass at least the prompt
  // parts it shares with the pass before it.
  EXPECT_GE(kept.stats.cached_reference_tokens * 2, kept.stats.reference_tokens);
  EXPECT_LT(kept.stats.cached_reference_tokens * 2, kept.stats.reference_tokens + 64);
  EXPECT_EQ(kept.tokens, plain.tokens);
  EXPECT_EQ(kept.markdown, plain.markdown);
}

}  // namespace
}  // namespace folio
