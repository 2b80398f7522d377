// LineRecognizer's Int8 precision against its F32 precision, with the shipped folio-mini-ocr 2 and 3
// recognizers (models/folio-mini-ocr-2 and -3, trained weights: a random model's logits are too flat
// for the comparison to mean anything) on the rendered line of tests/fixtures/mini2 (lines.py's crop
// rule).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "vision/line_recognizer.h"

namespace folio {
namespace {

const std::string kLine = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/recognizer_golden.safetensors";

struct Fixture {
  explicit Fixture(const std::string& name) : dir(std::string(FOLIO_SOURCE_DIR) + "/models/" + name) {}
  std::string dir;
  std::unique_ptr<SafetensorsCheckpoint> model = SafetensorsCheckpoint::open(dir + "/model.safetensors");
  std::string charset = read_json_file(dir + "/config.json")["recognizer"]["charset"].get<std::string>();
  std::unique_ptr<SafetensorsCheckpoint> line_file = SafetensorsCheckpoint::open(kLine);
  std::vector<float> line = to_f32_vector(line_file->get("input"));
  int64_t width = line_file->get("input").shape[1];
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

class LineRecognizerInt8 : public ::testing::TestWithParam<const char*> {};

TEST_P(LineRecognizerInt8, ReadsTheLineAsF32DoesWithinAProvenTolerance) {
  Fixture f(GetParam());
  const LineRecognizer f32(*f.model, f.charset, "recognizer.", LineRecognizer::Precision::F32);
  const LineRecognizer int8(*f.model, f.charset, "recognizer.");
  ASSERT_EQ(int8.precision(), LineRecognizer::Precision::Int8);
  ThreadPool pool(1);
  const std::vector<float> want = f32.logits(f.line.data(), f.width, pool);
  const std::vector<float> got = int8.logits(f.line.data(), f.width, pool);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(f32.greedy_text(want), "Quick brown foxes: 42 jumps (x3)!");
  EXPECT_EQ(int8.greedy_text(got), f32.greedy_text(want));
  float scale = 0;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  const float err = max_abs_diff(got, want), tol = 0.03f * scale;  // measured 0.015
  std::printf("int8 vs f32: max |logit difference| %.3g (max |logit| %.3g)\n", err, scale);
  EXPECT_LT(err, tol);
  // The tolerance discriminates: the line moved by one frame (4 columns) moves f32's own logits
  // by several times it.
  std::vector<float> shifted(f.line.size(), 0.0f);
  for (int64_t r = 0; r < LineRecognizer::kHeight; ++r)
    std::copy_n(f.line.data() + r * f.width, f.width - 4, shifted.data() + r * f.width + 4);
  const float moved = max_abs_diff(f32.logits(shifted.data(), f.width, pool), want);
  std::printf("f32, the line moved by one frame: %.3g\n", moved);
  EXPECT_GT(moved, 3 * tol);
}

TEST_P(LineRecognizerInt8, SameBitsOnEveryIsaAndThreadCount) {
  Fixture f(GetParam());
  const LineRecognizer rec(*f.model, f.charset, "recognizer.");
  const kernels::Isa saved = kernels::active_isa();
  ThreadPool one(1), two(2);
  kernels::set_isa(kernels::Isa::Scalar);
  const std::vector<float> want = rec.logits(f.line.data(), f.width, one);
  for (kernels::Isa isa : {kernels::Isa::Avx2, kernels::Isa::Avx512}) {
    if (kernels::best_isa() < isa) continue;
    kernels::set_isa(isa);
    const std::vector<float> got = rec.logits(f.line.data(), f.width, two);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << kernels::isa_name(isa);
  }
  kernels::set_isa(saved);
  const LineCrop crop{f.width, f.line, 10.0};
  EXPECT_EQ(rec.read_many({&crop, &crop, &crop}, two), rec.read_many({&crop, &crop, &crop}, one));
}

INSTANTIATE_TEST_SUITE_P(Shipped, LineRecognizerInt8, ::testing::Values("folio-mini-ocr-2", "folio-mini-ocr-3"),
                         [](const auto& info) { return std::string(info.param[15] == '2' ? "mini2" : "mini3"); });

}  // namespace
}  // namespace folio
