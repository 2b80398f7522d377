#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "runtime/ocr_accuracy.h"

namespace folio {
namespace {

TEST(OcrAccuracy, EditDistanceCountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abcd"), 4u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
  EXPECT_EQ(edit_distance("same text\n", "same text\n"), 0u);
}

TEST(OcrAccuracy, CerIsPerPageAndCountsMissingPages) {
  // Trailing newlines are ignored; the page marker itself is not a character.
  CerCount c = text_cer("abc\n<page>xyz\n", "abc\n<page>xyz\n", "<page>");
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(c.chars, 6u);
  // One substitution on page 2; page 3 missing entirely.
  c = text_cer("abc<page>xyq", "abc<page>xyz<page>hello", "<page>");
  EXPECT_EQ(c.errors, 1u + 5u);
  EXPECT_EQ(c.chars, 11u);
  EXPECT_NEAR(c.cer(), 6.0 / 11.0, 1e-12);
  // An extra hypothesis page is all errors; a shifted page boundary costs on both sides.
  c = text_cer("ab<page>cd<page>ef", "ab<page>cd", "<page>");
  EXPECT_EQ(c.errors, 2u);
  EXPECT_EQ(c.chars, 4u);
}

TEST(OcrAccuracy, TokenAgreementUsesTheLongerRun) {
  std::vector<int32_t> base = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(token_agreement(base, base), 1.0);
  EXPECT_DOUBLE_EQ(token_agreement(std::vector<int32_t>{1, 2, 9, 4}, base), 0.75);
  EXPECT_DOUBLE_EQ(token_agreement(std::vector<int32_t>{1, 2}, base), 0.5);
  EXPECT_DOUBLE_EQ(token_agreement(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}, base), 0.5);
}

TEST(OcrAccuracy, HeldoutSetsAreListedInOrderWithTheirText) {
  const std::string root = std::string(FOLIO_SOURCE_DIR) + "/data/heldout-grid";
  auto docs = heldout_docs(root, 1, 3);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_NE(docs[0].pdf.find("doc-01.pdf"), std::string::npos);
  EXPECT_NE(docs[2].pdf.find("doc-03.pdf"), std::string::npos);
  EXPECT_FALSE(docs[0].text.empty());
  try {
    heldout_docs(root, 1, 1000);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
  EXPECT_THROW(heldout_docs(root, 7, 1), Error);
}

}  // namespace
}  // namespace folio
