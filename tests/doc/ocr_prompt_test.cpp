#include "doc/ocr_prompt.h"

#include <gtest/gtest.h>

#include "doc/preprocess.h"
#include "doc_test_util.h"
#include "text/bpe_tokenizer.h"

namespace folio {
namespace {

using doc_test::expect_invalid;

constexpr int32_t kImage = 1500;

const Tokenizer& tokenizer() {
  static const auto tok = load_tokenizer_json_string(make_synthetic_bpe_tokenizer_json(
      2048, {{"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<image>", kImage}}, 7));
  return *tok;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(OcrPrompt, SinglePageBase) {
  const int64_t n = image_token_count({1, 1});
  const OcrPrompt p = build_ocr_prompt(tokenizer(), std::vector<int64_t>{n}, default_ocr_prompt(1));
  const std::vector<int32_t> text = tokenizer().encode("document parsing.");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(p.ids, concat({{0}, std::vector<int32_t>(273, kImage), text}));
  ASSERT_EQ(p.pages.size(), 1u);
  EXPECT_EQ(p.pages[0].start, 1);
  EXPECT_EQ(p.pages[0].count, 273);
  EXPECT_EQ(p.image_tokens(), 273);
  EXPECT_EQ(tokenizer().decode(std::span(p.ids).subspan(274)), "document parsing.");
  const auto mask = p.image_mask();
  EXPECT_EQ(mask[0], 0);
  EXPECT_EQ(mask[1], 1);
  EXPECT_EQ(mask[273], 1);
  EXPECT_EQ(mask[274], 0);
}

TEST(OcrPrompt, SinglePageGundamCount) {
  const int64_t n = image_token_count({4, 6});
  const OcrPrompt p = build_ocr_prompt(tokenizer(), std::vector<int64_t>{n}, kSinglePagePrompt);
  EXPECT_EQ(p.image_tokens(), 2733);
  EXPECT_EQ(p.ids.size(), 1 + 2733 + tokenizer().encode("document parsing.").size());
}

TEST(OcrPrompt, MultiPageAllAtTheOneImagePosition) {
  const std::vector<int64_t> pages(3, 273);
  const OcrPrompt p = build_ocr_prompt(tokenizer(), pages, default_ocr_prompt(3));
  const std::vector<int32_t> text = tokenizer().encode("Multi page parsing.");
  EXPECT_EQ(p.ids, concat({{0}, std::vector<int32_t>(819, kImage), text}));
  ASSERT_EQ(p.pages.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.pages[i].start, 1 + 273 * i);
    EXPECT_EQ(p.pages[i].count, 273);
  }
  EXPECT_EQ(p.image_tokens(), 819);
}

TEST(OcrPrompt, TextBeforeTheImageAndExplicitIds) {
  OcrPromptOptions opt;
  opt.bos_id = 5;
  opt.image_token_id = 9;
  const OcrPrompt p = build_ocr_prompt(tokenizer(), std::vector<int64_t>{2}, "Read: <image> now", opt);
  const auto before = tokenizer().encode("Read: "), after = tokenizer().encode(" now");
  EXPECT_EQ(p.ids, concat({{5}, before, {9, 9}, after}));
  EXPECT_EQ(p.pages[0].start, int64_t(1 + before.size()));
}

TEST(OcrPrompt, Errors) {
  const std::vector<int64_t> one{273};
  expect_invalid([&] { build_ocr_prompt(tokenizer(), one, "document parsing."); }, {"'document parsing.'", "no <image>"});
  expect_invalid([&] { build_ocr_prompt(tokenizer(), one, "<image><image>x"); }, {"more than one <image>"});
  expect_invalid([&] { build_ocr_prompt(tokenizer(), {}, kSinglePagePrompt); }, {"at least one page"});
  expect_invalid([&] { build_ocr_prompt(tokenizer(), std::vector<int64_t>{273, 0}, kMultiPagePrompt); },
                 {"page 2", "0 image tokens"});
  // A vocabulary without "<image>" falls back to 128815, which must exist.
  const auto plain = load_tokenizer_json_string(make_synthetic_bpe_tokenizer_json(
      1024, {{"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}}, 3));
  expect_invalid([&] { build_ocr_prompt(*plain, one, kSinglePagePrompt); }, {"128815", "outside the vocabulary"});
}

}  // namespace
}  // namespace folio
