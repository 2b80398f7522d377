// folio-mini-ocr 2's structure decoder inputs and decode against torch
// (tools/fixtures/make_structure_fixture.py): tests/fixtures/mini2/structure holds a tiny random
// model in export_model.py's layout, line records of two pages, and torch's features, reference rows
// and teacher-forced logits under R-SWA (window 4).
#include "vision/structure_tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/decoder.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "vision/line_features.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure/";

std::vector<std::vector<ReadLine>> load_records(std::vector<int>* heights) {
  std::ifstream in(kDir + "records.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::vector<ReadLine>> pages;
  for (const auto& p : j) {
    heights->push_back(p["size"][1].get<int>());
    std::vector<ReadLine> lines;
    for (const auto& l : p["lines"]) {
      ReadLine r;
      r.x0 = l["box"][0], r.y0 = l["box"][1], r.x1 = l["box"][2], r.y1 = l["box"][3];
      r.column = l["column"], r.columns = l["columns"], r.region_x0 = l["region"][0], r.region_x1 = l["region"][1];
      r.x_height = l["xh"], r.gap_before = l["gap_before"];
      for (const auto& s : l["segments"]) r.segments.push_back({s["x"][0], s["x"][1], s["text"], s["ink"]});
      lines.push_back(std::move(r));
    }
    pages.push_back(std::move(lines));
  }
  return pages;
}

struct StructureFixture {
  nlohmann::json config = read_json_file(kDir + "model/config.json");
  std::unique_ptr<TensorSource> weights = SafetensorsCheckpoint::open(kDir + "model/model.safetensors");
  std::unique_ptr<TensorSource> expected = SafetensorsFile::open(kDir + "expected.safetensors");
  CharClasses classes{config["recognizer"]["charset"].get<std::string>()};
  std::vector<int> heights;
  std::vector<std::vector<ReadLine>> pages = load_records(&heights);
  std::vector<float> want(const std::string& name) { return to_f32_vector(expected->get(name)); }
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(StructureGolden, LineFeaturesMatchFeaturesPy) {
  StructureFixture f;
  std::vector<float> numeric, chars;
  for (size_t p = 0; p < f.pages.size(); ++p)
    for (const LineFeatures& lf : page_line_features(f.pages[p], f.heights[p], f.classes)) {
      numeric.insert(numeric.end(), lf.numeric.begin(), lf.numeric.end());
      for (int32_t c : lf.chars) chars.push_back(static_cast<float>(c));
    }
  // Double arithmetic on both sides, stored as float: rounding only.
  EXPECT_LT(max_abs_diff(numeric, f.want("numeric")), 1e-6f);
  EXPECT_EQ(chars, f.want("chars"));
}

TEST(StructureGolden, ReferenceRowsAndTeacherForcedLogitsUnderRswa) {
  StructureFixture f;
  const ModelConfig cfg = ModelConfig::from_hf_json(f.config["text_config"]);
  Decoder dec(cfg, *f.weights, WeightNaming::HuggingFace);
  const int64_t d = cfg.hidden;
  const StructureTokens tokens(*f.weights, d, f.classes.count());
  const int32_t page_token = f.config["page_token_id"];
  std::vector<float> ref;
  std::vector<float> row(static_cast<size_t>(d));
  for (size_t p = 0; p < f.pages.size(); ++p) {
    const auto feats = page_line_features(f.pages[p], f.heights[p], f.classes);
    for (size_t i = 0; i < feats.size(); ++i) {
      tokens.line_token(feats[i], row.data());
      tokens.add_code(StructureTokenType::Line, int64_t(p), int64_t(i), row.data());
      ref.insert(ref.end(), row.begin(), row.end());
    }
    std::fill(row.begin(), row.end(), 0.0f);
    const bool last = p + 1 == f.pages.size();
    tokens.add_code(last ? StructureTokenType::DocEnd : StructureTokenType::PageEnd, int64_t(p), int64_t(feats.size()), row.data());
    ref.insert(ref.end(), row.begin(), row.end());
  }
  dec.embed(cfg.bos_id, row.data());
  tokens.add_code(StructureTokenType::Text, 0, 0, row.data());
  ref.insert(ref.end(), row.begin(), row.end());
  EXPECT_LT(max_abs_diff(ref, f.want("reference")), 1e-5f);
  {
    // The tolerance discriminates: <bos> with the code of line 1 instead of line 0.
    std::vector<float> moved = ref;
    float* last = moved.data() + moved.size() - static_cast<size_t>(d);
    dec.embed(cfg.bos_id, last);
    tokens.add_code(StructureTokenType::Text, 0, 1, last);
    EXPECT_GT(max_abs_diff(moved, f.want("reference")), 100 * 1e-5f);
  }

  ThreadPool pool(2);
  KVBlockPool kvpool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(kvpool, 1, KVPolicy::parse("rswa", 4), 4);
  const int64_t V = cfg.vocab;
  std::vector<float> logits(static_cast<size_t>(V));
  Decoder::Input in;
  in.kv = &kv;
  in.embeddings = ref.data();
  in.n_embeddings = static_cast<int64_t>(ref.size()) / d;
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), pool);
  const std::vector<float> teacher = f.want("teacher"), step_logits = f.want("logits");
  StructureCursor cursor(page_token);
  for (size_t s = 0; s < teacher.size(); ++s) {
    const std::vector<float> want(step_logits.begin() + long(s * V), step_logits.begin() + long((s + 1) * V));
    EXPECT_LT(max_abs_diff(want, logits), 2e-5f) << "step " << s;
    const auto t = static_cast<int32_t>(teacher[s]);
    cursor.advance(t);
    dec.embed(t, row.data());
    tokens.add_code(StructureTokenType::Text, cursor.page(), cursor.line(), row.data());
    Decoder::Input step;
    step.kv = &kv;
    step.embeddings = row.data();
    step.n_embeddings = 1;
    if (s + 1 < teacher.size()) dec.forward({&step, 1}, logits.data(), pool);
  }
  EXPECT_EQ(kv.cached_tokens(), in.n_embeddings + 4);  // the reference and <bos> pinned, the window full
}

TEST(StructureGolden, CharClassesFollowTheCharset) {
  const CharClasses c("ab\xc3\xa9\xe2\x80\xa2");  // a, b, é, •
  EXPECT_EQ(c.of(U'a'), 1);
  EXPECT_EQ(c.of(U'\u00e9'), 3);
  EXPECT_EQ(c.of(U'\u2022'), 4);
  EXPECT_EQ(c.of(U'z'), 0);
  EXPECT_EQ(c.count(), 5);
}

}  // namespace
}  // namespace folio
