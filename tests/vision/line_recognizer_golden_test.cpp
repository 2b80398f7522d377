// folio-mini-ocr 2's line recognizer in C++ against torch: tests/fixtures/mini2 holds a small random
// recognizer exported as tools/train/mini2/export_recognizer.py exports (bf16, batch norm folded,
// statistics drawn at random so the folding matters), a rendered line crop and the logits torch
// computed for it (tools/fixtures/make_recognizer_fixture.py).
#include "vision/line_recognizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "io/safetensors.h"

namespace folio {
namespace {

const std::string kFixture = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/recognizer_golden.safetensors";

// 168 characters, the first of them two bytes long in UTF-8: class 1 reads as "é".
std::string test_charset() {
  std::string s = "\xc3\xa9";
  for (int i = 0; i < 167; ++i) s.push_back(static_cast<char>(33 + i % 90));
  return s;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(LineRecognizer, MatchesTorchOnARenderedLine) {
  auto st = SafetensorsCheckpoint::open(kFixture);
  const LineRecognizer rec(*st, test_charset(), "", LineRecognizer::Precision::F32);
  ASSERT_EQ(rec.precision(), LineRecognizer::Precision::F32);
  const TensorView& in = st->get("input");
  const std::vector<float> crop = to_f32_vector(in), want = to_f32_vector(st->get("expected_logits"));
  ThreadPool pool(2);
  const std::vector<float> got = rec.logits(crop.data(), in.shape[1], pool);
  ASSERT_EQ(got.size(), want.size());
  float scale = 0;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  // f32 against f32 over the same bf16 weights: only summation order differs (measured 1.2e-7).
  const float tol = 1e-5f * std::max(1.0f, scale);
  const float err = max_abs_diff(got, want);
  std::printf("max |logit difference| %.3g (max |logit| %.3g)\n", err, scale);
  EXPECT_LT(err, tol);
  // The tolerance discriminates: the same line shifted by one frame (4 columns) moves the logits of
  // this small random model by 7.5e-3, hundreds of times the tolerance.
  std::vector<float> shifted(crop.size(), 0.0f);
  const int64_t W = in.shape[1];
  for (int64_t r = 0; r < LineRecognizer::kHeight; ++r)
    std::copy_n(crop.data() + r * W, W - 4, shifted.data() + r * W + 4);
  EXPECT_GT(max_abs_diff(rec.logits(shifted.data(), W, pool), want), 100 * tol);
}

TEST(LineRecognizer, GreedyCtcMergesRepeatsAndDropsBlanks) {
  auto st = SafetensorsCheckpoint::open(kFixture);
  const LineRecognizer rec(*st, test_charset());
  const int64_t V = rec.classes();
  const std::vector<int> path = {0, 1, 1, 0, 1, 2, 2, 0, 0, 3};  // e e (blank between) then 2, 3
  std::vector<float> logits(path.size() * static_cast<size_t>(V), 0.0f);
  for (size_t t = 0; t < path.size(); ++t) logits[t * static_cast<size_t>(V) + static_cast<size_t>(path[t])] = 1.0f;
  const std::string cs = test_charset();
  EXPECT_EQ(rec.greedy_text(logits), std::string("\xc3\xa9\xc3\xa9") + cs[2] + cs[3]);
}

TEST(LineRecognizer, ReadManyReadsEachCropAsReadDoes) {
  // Crops of different widths (the line, a prefix of it, the line shifted) spread over two threads
  // come back in their own order with the text read() gives each alone.
  auto st = SafetensorsCheckpoint::open(kFixture);
  const LineRecognizer rec(*st, test_charset());
  const TensorView& in = st->get("input");
  const std::vector<float> line = to_f32_vector(in);
  const int64_t W = in.shape[1], H = LineRecognizer::kHeight;
  LineCrop full{W, line, 10.0}, prefix{W / 2 / 4 * 4, {}, 10.0}, shifted{W, std::vector<float>(line.size(), 0.0f), 10.0};
  for (int64_t r = 0; r < H; ++r) {
    prefix.ink.insert(prefix.ink.end(), line.begin() + r * W, line.begin() + r * W + prefix.width);
    std::copy_n(line.data() + r * W, W - 8, shifted.ink.data() + r * W + 8);
  }
  ThreadPool one(1), two(2);
  const std::vector<const LineCrop*> crops = {&prefix, &full, &shifted, &prefix};
  const std::vector<std::string> got = rec.read_many(crops, two);
  ASSERT_EQ(got.size(), crops.size());
  for (size_t i = 0; i < crops.size(); ++i) EXPECT_EQ(got[i], rec.read(crops[i]->ink.data(), crops[i]->width, one)) << i;
  EXPECT_NE(rec.logits(prefix.ink.data(), prefix.width, one).size(), rec.logits(full.ink.data(), W, one).size());
  EXPECT_TRUE(rec.read_many({}, two).empty());
}

TEST(LineRecognizer, BadInputIsNamed) {
  auto st = SafetensorsCheckpoint::open(kFixture);
  try {
    LineRecognizer rec(*st, "abc");
    FAIL() << "a 3-character charset for a 169-class head must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("169 classes"), std::string::npos) << e.what();
  }
  const LineRecognizer rec(*st, test_charset());
  ThreadPool pool(1);
  std::vector<float> crop(LineRecognizer::kHeight * 10, 0.0f);
  EXPECT_THROW(rec.logits(crop.data(), 10, pool), Error);
  try {
    LineRecognizer missing(*st, test_charset(), "other.");
    FAIL() << "a prefix with no tensors must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other.conv0.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace folio
