// folio's mini OCR model against its PyTorch twin (tools/train/make_golden.py): front-end frames and
// CTC logits, every row's greedy emissions, the reference embeddings with their position codes, and
// a greedy decode under R-SWA (window 8) on a small random-weight checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "doc/gray_page.h"
#include "doc/image.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "vision/mini_ocr_codes.h"
#include "vision/mini_ocr_frontend.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini_ocr/";

float max_abs_diff(const std::vector<float>& a, const float* b, size_t n) {
  EXPECT_EQ(a.size(), n);
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), n); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

struct MiniFixture {
  std::unique_ptr<TensorSource> weights = SafetensorsCheckpoint::open(kDir + "model/model.safetensors");
  std::unique_ptr<TensorSource> expected = SafetensorsFile::open(kDir + "expected.safetensors");
  MiniOcrConfig cfg = MiniOcrConfig::from_hf_json(read_json_file(kDir + "model/config.json"));
  MiniOcrFrontEnd front{cfg, *weights};
  MiniOcrCodes codes{cfg, *weights};
  ThreadPool pool{2};

  std::vector<float> want(const std::string& name) { return to_f32_vector(expected->get(name)); }
  std::vector<MiniOcrRow> read(int page) {
    auto gray = gray_page(load_image(kDir + "page" + std::to_string(page) + ".png"), static_cast<int>(cfg.image_width),
                          static_cast<int>(cfg.image_height));
    return front.read_page(gray.data(), pool);
  }
};

TEST(MiniOcrGolden, FrontEndFramesAndCtcLogits) {
  MiniFixture f;
  auto gray = gray_page(load_image(kDir + "page1.png"), static_cast<int>(f.cfg.image_width), static_cast<int>(f.cfg.image_height));
  std::vector<float> band(static_cast<size_t>(f.cfg.line_pitch * f.cfg.image_width));
  for (size_t i = 0; i < band.size(); ++i) band[i] = (gray[f.cfg.margin_top * f.cfg.image_width + i] - 0.5f) / 0.5f;
  std::vector<float> logits;
  MiniOcrRow row = f.front.read_band(band.data(), f.pool, &logits);
  EXPECT_EQ(static_cast<int64_t>(row.frames.size()), f.cfg.frames_per_row() * f.cfg.frame_hidden);
  EXPECT_LT(max_abs_diff(f.want("band0.frames"), row.frames.data(), row.frames.size()), 1e-4f);
  EXPECT_LT(max_abs_diff(f.want("band0.ctc_logits"), logits.data(), logits.size()), 1e-4f);
}

TEST(MiniOcrGolden, GreedyEmissionsOfEveryRow) {
  MiniFixture f;
  auto counts = f.want("emit.counts"), frames = f.want("emit.frames"), labels = f.want("emit.labels");
  size_t k = 0, band = 0;
  for (int page = 1; page <= 2; ++page)
    for (const MiniOcrRow& row : f.read(page)) {
      ASSERT_EQ(row.emit_frame.size(), static_cast<size_t>(counts[band])) << "page " << page << " band " << band;
      for (size_t j = 0; j < row.emit_frame.size(); ++j, ++k) {
        EXPECT_EQ(row.emit_frame[j], static_cast<int32_t>(frames[k]));
        EXPECT_EQ(row.emit_label[j], static_cast<int32_t>(labels[k]));
      }
      ++band;
    }
  EXPECT_EQ(k, frames.size());
}

TEST(MiniOcrGolden, ReferenceEmbeddingsAndGreedyDecodeUnderRswa) {
  MiniFixture f;
  Decoder dec(ModelConfig::from_hf_file(kDir + "model/config.json"), *f.weights, WeightNaming::HuggingFace);
  ASSERT_FALSE(dec.config().rope);
  const int64_t d = f.cfg.hidden;
  std::vector<float> ref;
  f.codes.append_page(f.read(1), 0, false, ref);
  f.codes.append_page(f.read(2), 1, true, ref);
  std::vector<float> bos(static_cast<size_t>(d)), code(static_cast<size_t>(d));
  dec.embed(kMiniBos, bos.data());
  f.codes.code(MiniOcrTokenType::Text, {}, code.data());
  for (int64_t i = 0; i < d; ++i) ref.push_back(bos[static_cast<size_t>(i)] + code[static_cast<size_t>(i)]);
  EXPECT_LT(max_abs_diff(f.want("reference"), ref.data(), ref.size()), 1e-4f);

  KVBlockPool kvpool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 8), 4);
  const int64_t V = dec.config().vocab;
  std::vector<float> logits(static_cast<size_t>(V));
  Decoder::Input in;
  in.kv = &kv;
  in.embeddings = ref.data();
  in.n_embeddings = static_cast<int64_t>(ref.size()) / d;
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), f.pool);
  auto tokens = f.want("greedy.tokens"), step_logits = f.want("greedy.logits");
  MiniOcrCursor cursor;
  std::vector<float> next(static_cast<size_t>(d));
  for (size_t s = 0; s < tokens.size(); ++s) {
    std::vector<float> want(step_logits.begin() + static_cast<long>(s * V), step_logits.begin() + static_cast<long>((s + 1) * V));
    EXPECT_LT(max_abs_diff(want, logits.data(), logits.size()), 2e-4f) << "step " << s;
    const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(t, static_cast<int32_t>(tokens[s])) << "greedy token at step " << s;
    cursor.advance(t);
    dec.embed(t, next.data());
    f.codes.code(MiniOcrTokenType::Text, cursor.position(), code.data());
    for (int64_t i = 0; i < d; ++i) next[static_cast<size_t>(i)] += code[static_cast<size_t>(i)];
    Decoder::Input step;
    step.kv = &kv;
    step.embeddings = next.data();
    step.n_embeddings = 1;
    dec.forward({&step, 1}, logits.data(), f.pool);
  }
  EXPECT_EQ(kv.cached_tokens(), in.n_embeddings + 8);
}

TEST(MiniOcrGolden, CursorFollowsRowsAndPages) {
  MiniOcrCursor c(3);
  for (int32_t t : std::initializer_list<int32_t>{'a', 'b', kMiniNewline, 'c'}) c.advance(t);
  EXPECT_EQ(c.position().page, 3);
  EXPECT_EQ(c.position().row, 1);
  EXPECT_EQ(c.position().ch, 1);
  c.advance(kMiniPage);
  EXPECT_EQ(c.position().page, 4);
  EXPECT_EQ(c.position().row, 0);
  EXPECT_EQ(c.position().ch, 0);
}

TEST(MiniOcrConfig, RejectsBadGeometryNamingTheKey) {
  auto j = read_json_file(kDir + "model/config.json");
  j["vision_config"]["rows"] = 40;
  try {
    MiniOcrConfig::from_hf_json(j);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows"), std::string::npos) << e.what();
  }
  j = read_json_file(kDir + "model/config.json");
  j["vision_config"]["context_kernel"] = "five";
  EXPECT_THROW(MiniOcrConfig::from_hf_json(j), Error);
}

}  // namespace
}  // namespace folio
