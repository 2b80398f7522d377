// The normalisation `folio bench accuracy` applies before scoring a markdown reading against a
// plain-text truth (scoring_text.h), with the cases eval_folio.py's normalise() handles alike.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "runtime/ocr_accuracy.h"
#include "runtime/scoring_text.h"

namespace folio {
namespace {

TEST(ScoringText, MarkdownSyntaxComesOff) {
  const std::string md =
      "<!-- page 1 -->\n# NAME\n## Options\n- first item\n1. numbered stays\n```\ncode line\n```\n| a | b  |\n|---|---|\n"
      "| c |  |\n#not a heading\n-not a list";
  EXPECT_EQ(markdown_as_text(md), "NAME\nOptions\nfirst item\n1. numbered stays\ncode line\na b\nc \n#not a heading\n-not a list");
  EXPECT_EQ(markdown_as_text(""), "");
  EXPECT_EQ(markdown_as_text("plain"), "plain");
}

TEST(ScoringText, CharactersAreMappedAndWhitespaceCollapsed) {
  // ligatures, U+2010 / U+2212 dashes, soft hyphen, no-break and thin spaces, tab, bullets.
  EXPECT_EQ(scoring_text("\xEF\xAC\x81le \xE2\x80\x90x \xE2\x88\x92" "1 co\xC2\xAD" "op a\xC2\xA0" "b\xE2\x80\x89" "c\td"),
            "file -x -1 coop a b c d");
  EXPECT_EQ(scoring_text("  \xE2\x80\xA2 item\n\n  next  \n"), "item next");
  // Characters of the recognizer's charset stay (accents, typographic quotes, em dash); others go.
  EXPECT_EQ(scoring_text("caf\xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D \xE2\x80\x94 \xE4\xB8\xAD|"), "caf\xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D \xE2\x80\x94 |");
  // Invalid UTF-8 bytes are dropped, the text around them kept.
  EXPECT_EQ(scoring_text("a\xFF" "b\xC3"), "ab");
  EXPECT_EQ(scoring_text(""), "");
}

TEST(ScoringText, NormalisedCerDiffersFromExactOnlyBySyntaxAndSpacing) {
  const std::string truth = "NAME\nls - list    directory contents<page>SYNOPSIS\nls [OPTION]...";
  const std::string reading = "# NAME\n\nls - list directory contents<page>## SYNOPSIS\nls [OPTIOM]...";
  auto norm = [](const std::string& p) { return scoring_text(p); };
  const CerCount exact = text_cer(reading, truth, "<page>");
  const CerCount normalised =
      text_cer(map_pages(reading, "<page>", [](const std::string& p) { return scoring_text(markdown_as_text(p)); }),
               map_pages(truth, "<page>", norm), "<page>");
  EXPECT_GT(exact.errors, 1u);
  EXPECT_EQ(normalised.errors, 1u);  // OPTIOM
}

TEST(ScoringText, HeldoutSetJsonChoosesTheComparison) {
  const std::string shipped = std::string(FOLIO_SOURCE_DIR) + "/data/heldout";
  EXPECT_TRUE(heldout_docs(shipped, 1, 1)[0].normalised);
  EXPECT_TRUE(composed_heldout_doc(shipped, 3).normalised);
  EXPECT_FALSE(heldout_docs(std::string(FOLIO_SOURCE_DIR) + "/data/heldout-grid", 1, 1)[0].normalised);
  // An unknown comparison is an error naming the file.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("folio_scoring_" + std::to_string(::getpid()));
  fs::create_directories(dir / "p1");
  fs::copy_file(shipped + "/p1/doc-01.pdf", dir / "p1/doc-01.pdf");
  fs::copy_file(shipped + "/p1/doc-01.txt", dir / "p1/doc-01.txt");
  std::ofstream(dir / "set.json") << R"({"compare": "fuzzy"})";
  try {
    heldout_docs(dir.string(), 1, 1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("set.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fuzzy"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "set.json") << "not json";
  EXPECT_THROW(heldout_docs(dir.string(), 1, 1), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace folio
