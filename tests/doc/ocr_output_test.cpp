#include "doc/ocr_output.h"

#include <gtest/gtest.h>

#include <chrono>

#include "doc/html_table.h"
#include "doc/ocr_json.h"
#include "doc/ocr_markdown.h"

namespace folio {
namespace {

TEST(OcrOutput, DetFormBlocks) {
  const std::string raw =
      "<|det|>title [100, 50, 900, 120]<|/det|># Annual Report\n\n"
      "<|det|>text [100, 150, 900, 400]<|/det|>First paragraph.\nSecond line.\n"
      "<|det|>image [200, 450, 800, 700]<|/det|>\n"
      "<|det|>table [100, 720, 900, 950]<|/det|><table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>"
      "<｜end▁of▁sentence｜>";
  const auto pages = parse_ocr_output(raw);
  ASSERT_EQ(pages.size(), 1u);
  const auto& b = pages[0].blocks;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].label, "title");
  EXPECT_EQ(b[0].boxes, (std::vector<OcrBox>{{100, 50, 900, 120}}));
  EXPECT_EQ(b[0].text, "# Annual Report");
  EXPECT_EQ(b[1].text, "First paragraph.\nSecond line.");
  EXPECT_EQ(b[2].label, "image");
  EXPECT_EQ(b[2].text, "");
  EXPECT_EQ(b[3].label, "table");

  EXPECT_EQ(page_markdown(pages[0]),
            "# Annual Report\n\nFirst paragraph.\nSecond line.\n\n<!-- image [200, 450, 800, 700] -->\n\n"
            "| A | B |\n| --- | --- |\n| 1 | 2 |");
}

TEST(OcrOutput, RefFormWithSeveralBoxes) {
  const auto pages = parse_ocr_output(
      "<|ref|>text<|/ref|><|det|>[[10, 20, 30, 40], [50, 60, 70, 80]]<|/det|>\nHello\n"
      "<|ref|>sub_title<|/ref|><|det|>[[1,2,3,4]]<|/det|>## Part 2");
  ASSERT_EQ(pages.size(), 1u);
  ASSERT_EQ(pages[0].blocks.size(), 2u);
  EXPECT_EQ(pages[0].blocks[0].label, "text");
  EXPECT_EQ(pages[0].blocks[0].boxes, (std::vector<OcrBox>{{10, 20, 30, 40}, {50, 60, 70, 80}}));
  EXPECT_EQ(pages[0].blocks[0].text, "Hello");
  EXPECT_EQ(pages[0].blocks[1].label, "sub_title");
  EXPECT_EQ(pages[0].blocks[1].text, "## Part 2");
}

TEST(OcrOutput, PagesSplitOnPageMarker) {
  const auto pages = parse_ocr_output(
      "<PAGE><|det|>text [0, 0, 999, 999]<|/det|>one\n<PAGE>\n<|det|>text [0, 0, 10, 10]<|/det|>two<PAGE>");
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].blocks.at(0).text, "one");
  EXPECT_EQ(pages[1].blocks.at(0).text, "two");
  EXPECT_TRUE(pages[2].blocks.empty());
  EXPECT_EQ(document_markdown(pages), "<!-- page 1 -->\n\none\n\n<!-- page 2 -->\n\ntwo\n\n<!-- page 3 -->");
  // Text before the first <PAGE> is kept at the start of page 1 (the official code drops it).
  const auto kept = parse_ocr_output("stray words<PAGE>body");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(page_markdown(kept[0]), "stray words\n\nbody");
}

TEST(OcrOutput, PlainTextWithoutMarkup) {
  const auto pages = parse_ocr_output("  just text \\coloneqq x\n");
  ASSERT_EQ(pages.size(), 1u);
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].label, "");
  EXPECT_TRUE(pages[0].blocks[0].boxes.empty());
  EXPECT_EQ(page_markdown(pages[0]), "just text := x");
  EXPECT_TRUE(parse_ocr_output("").at(0).blocks.empty());
}

TEST(OcrOutput, TruncatedAndMalformedMarkupKeepsText) {
  // Output cut inside a box list: the partial marker is dropped, earlier text kept.
  auto pages = parse_ocr_output("<|det|>text [1, 2, 3, 4]<|/det|>Hello<|det|>text [12, 3");
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].text, "Hello");
  // Cut inside a ref label.
  pages = parse_ocr_output("Intro<|ref|>tit");
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].text, "Intro");
  // Missing <|/det|>: the label and box are still recognised, the rest is text.
  pages = parse_ocr_output("<|det|>text [5, 6, 7, 8] Body text here");
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].label, "text");
  EXPECT_EQ(pages[0].blocks[0].boxes, (std::vector<OcrBox>{{5, 6, 7, 8}}));
  EXPECT_EQ(pages[0].blocks[0].text, "Body text here");
  // Bad box list: block kept without boxes.
  pages = parse_ocr_output("<|det|>text [1, 2, x]<|/det|>words");
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].label, "text");
  EXPECT_TRUE(pages[0].blocks[0].boxes.empty());
  EXPECT_EQ(pages[0].blocks[0].text, "words");
  pages = parse_ocr_output("<|det|>text [1, 2, 3]<|/det|>three numbers");
  EXPECT_TRUE(pages[0].blocks.at(0).boxes.empty());
  // A stray tag inside text is removed, the sentence after an unterminated ref kept.
  pages = parse_ocr_output("a<|/det|>b <|ref|>more words follow\nhere");
  ASSERT_EQ(pages[0].blocks.size(), 1u);
  EXPECT_EQ(pages[0].blocks[0].text, "ab more words follow\nhere");
}

// Fuzz: random cuts and splices of valid output never throw, and every plain word survives in
// the markdown unless it sits inside a marker.
TEST(OcrOutput, NeverThrowsOnArbitraryPrefixes) {
  const std::string raw =
      "<PAGE><|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|># Alpha\n<|det|>text [5, 6, 7, 8]<|/det|>Beta "
      "<table><tr><td colspan=\"2\">x</td></tr></table>\n<PAGE><|det|>image [9, 9, 99, 99]<|/det|>Gamma";
  for (size_t n = 0; n <= raw.size(); ++n) {
    const std::string cut = raw.substr(0, n);
    std::vector<OcrPage> pages;
    ASSERT_NO_THROW(pages = parse_ocr_output(cut)) << cut;
    ASSERT_NO_THROW(document_markdown(pages));
    ASSERT_NO_THROW((void)ocr_to_json(pages, std::vector<PageSize>{{100, 100}}).dump());
  }
  const std::string md = document_markdown(parse_ocr_output(raw));
  for (const char* w : {"# Alpha", "Beta", "Gamma", "colspan"}) EXPECT_NE(md.find(w), std::string::npos) << w;
}

// Parsing is linear: 40,000 blocks (well-formed, then all unterminated) take well under a second;
// a quadratic scan would take minutes.
TEST(OcrOutput, LargeOutputsParseInLinearTime) {
  std::string good, bad;
  for (int i = 0; i < 40000; ++i) {
    good += "<|det|>text [1, 2, 3, 4]<|/det|>Paragraph number " + std::to_string(i) + " of the page.\n";
    bad += "<|det|>line " + std::to_string(i) + " text without a closing tag\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto pages = parse_ocr_output(good);
  const auto pages_bad = parse_ocr_output(bad);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(pages.at(0).blocks.size(), 40000u);
  EXPECT_EQ(pages.at(0).blocks.back().text, "Paragraph number 39999 of the page.");
  EXPECT_NE(page_markdown(pages_bad.at(0)).find("line 39999 text without a closing tag"), std::string::npos);
  EXPECT_LT(s, 5.0);
}

TEST(OcrOutput, BoxesToPixelsLikeTheOfficialCode) {
  // int(c / 999 * size)
  EXPECT_EQ(box_to_pixels({0, 0, 999, 999}, 2480, 3508), (OcrBox{0, 0, 2480, 3508}));
  EXPECT_EQ(box_to_pixels({100, 200, 500, 998}, 1000, 700), (OcrBox{100, 140, 500, 699}));
  EXPECT_EQ(box_to_pixels({-5, 2000, 333, 1}, 1000, 1000), (OcrBox{0, 1000, 333, 1}));
}

TEST(OcrOutput, PixelsNormaliseToTheBoxesThatMapBack) {
  // round(c * 999 / size), clamped: 0..999 of the page
  EXPECT_EQ(pixels_to_box({0, 0, 2480, 3508}, 2480, 3508), (OcrBox{0, 0, 999, 999}));
  EXPECT_EQ(pixels_to_box({100, 140, 500, 699}, 1000, 700), (OcrBox{100, 200, 500, 998}));
  EXPECT_EQ(pixels_to_box({-3, 0, 1200, 10}, 1000, 1000), (OcrBox{0, 0, 999, 10}));
  const OcrBox px{213, 284, 661, 535};
  const OcrBox back = box_to_pixels(pixels_to_box(px, 1275, 1650), 1275, 1650);
  for (int k = 0; k < 4; ++k) EXPECT_LE(std::abs(back[size_t(k)] - px[size_t(k)]), 2) << k;
}

TEST(OcrOutput, JsonHasPixelAndNormalisedBoxes) {
  const auto pages = parse_ocr_output(
      "<PAGE><|det|>title [0, 0, 999, 499]<|/det|># T\n<PAGE><|det|>text [10, 10, 20, 20]<|/det|>x\xE2\x82");
  const std::vector<PageSize> sizes{{2000, 1000}};
  const nlohmann::json j = ocr_to_json(pages, sizes);
  ASSERT_EQ(j["pages"].size(), 2u);
  const auto& p1 = j["pages"][0];
  EXPECT_EQ(p1["page"], 1);
  EXPECT_EQ(p1["width"], 2000);
  EXPECT_EQ(p1["markdown"], "# T");
  EXPECT_EQ(p1["blocks"][0]["label"], "title");
  EXPECT_EQ(p1["blocks"][0]["boxes"], nlohmann::json::parse("[[0, 0, 2000, 499]]"));
  EXPECT_EQ(p1["blocks"][0]["boxes_normalized"], nlohmann::json::parse("[[0, 0, 999, 499]]"));
  // Page 2 has no size: no pixel boxes; a character cut in half becomes U+FFFD.
  const auto& p2 = j["pages"][1];
  EXPECT_FALSE(p2.contains("width"));
  EXPECT_FALSE(p2["blocks"][0].contains("boxes"));
  EXPECT_EQ(p2["blocks"][0]["text"], "x\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_NO_THROW((void)j.dump());
}

TEST(HtmlTable, SimpleTablesBecomePipeTables) {
  EXPECT_EQ(*html_table_to_markdown("<table><thead><tr><th>Name</th><th>Value</th></tr></thead>"
                                    "<tbody><tr><td>a &amp; b</td><td>1<br/>2</td></tr>"
                                    "<tr><td>x|y</td></tr></tbody></table>"),
            "| Name | Value |\n| --- | --- |\n| a & b | 1 2 |\n| x\\|y |  |");
  // Cells without closing tags, upper case, entities.
  EXPECT_EQ(*html_table_to_markdown("<TABLE><TR><TD>&#65;&#x42;<TD> c  d </TABLE>"), "| AB | c d |\n| --- | --- |");
  EXPECT_FALSE(html_table_to_markdown("<table><tr><td rowspan=\"2\">a</td></tr></table>").has_value());
  EXPECT_FALSE(html_table_to_markdown("<table></table>").has_value());
  EXPECT_FALSE(html_table_to_markdown("<table><tr><td>a</td></tr>").has_value());
  EXPECT_FALSE(html_table_to_markdown("<table><tr><td><table><tr><td>n</td></tr></table></td></tr></table>").has_value());
}

TEST(HtmlTable, ConvertsTablesInsideText) {
  EXPECT_EQ(convert_html_tables("before\n<table><tr><td>1</td></tr></table>\nafter"), "before\n| 1 |\n| --- |\nafter");
  const std::string merged = "<table><tr><td colspan=2>1</td></tr></table>";
  EXPECT_EQ(convert_html_tables(merged), merged);
  EXPECT_EQ(convert_html_tables("cut <table><tr><td>1"), "cut <table><tr><td>1");
}

}  // namespace
}  // namespace folio
