#include "doc/pdf_document.h"

#include <gtest/gtest.h>
#include <poppler-document.h>

#include <algorithm>
#include <memory>

#include "doc/gray_page.h"
#include "doc/page_range.h"
#include "doc/page_source.h"
#include "doc_test_util.h"

namespace folio {
namespace {

using doc_test::expect_invalid;
using doc_test::fixture;

TEST(Pdf, PageCountAndRenderedSizes) {
  const PdfDocument doc = PdfDocument::open(fixture("two_pages.pdf"));
  EXPECT_EQ(doc.page_count(), 2);
  // Page 1 is 200 x 100 pt: 72 DPI gives 200 x 100 px, 300 DPI 833 x 417.
  EXPECT_EQ(doc.page_pixel_size(0, 72), (std::pair<int, int>{200, 100}));
  EXPECT_EQ(doc.page_pixel_size(0, 300), (std::pair<int, int>{833, 417}));
  // Page 2 is 100 x 150 pt with /Rotate 90: rendered landscape.
  EXPECT_EQ(doc.page_pixel_size(1, 72), (std::pair<int, int>{150, 100}));
  for (int i = 0; i < 2; ++i) {
    for (double dpi : {72.0, 150.0}) {
      const RgbImage img = doc.render_page(i, dpi);
      EXPECT_EQ((std::pair<int, int>{img.width, img.height}), doc.page_pixel_size(i, dpi)) << i << " " << dpi;
    }
  }
}

TEST(Pdf, RendersContentAsRgbOnWhitePaper) {
  const PdfDocument doc = PdfDocument::open(fixture("two_pages.pdf"));
  const RgbImage p1 = doc.render_page(0, 144);  // 400 x 200 px, 2 px per point
  ASSERT_EQ(p1.width, 400);
  ASSERT_EQ(p1.height, 200);
  // Blue rectangle at x 10..70 pt, y 10..50 pt from the bottom: pixel rows 100..180.
  EXPECT_EQ(p1.at(80, 150, 0), 0);
  EXPECT_EQ(p1.at(80, 150, 1), 0);
  EXPECT_EQ(p1.at(80, 150, 2), 255);
  // Paper is white.
  for (int c = 0; c < 3; ++c) EXPECT_EQ(p1.at(5, 5, c), 255);
  // The text "Page 1" (Helvetica 24 pt from x = 90 pt, baseline 40 pt, in the current fill
  // colour, blue) leaves blue pixels right of the rectangle.
  int dark = 0;
  for (int y = 0; y < 200; ++y) {
    for (int x = 180; x < 400; ++x) dark += p1.at(x, y, 0) < 100 && p1.at(x, y, 2) > 200;
  }
  EXPECT_GT(dark, 200);

  // Page 2 (rotated 90 degrees clockwise): the red band along the unrotated left edge ends up at
  // the top.
  const RgbImage p2 = doc.render_page(1, 72);
  ASSERT_EQ(p2.width, 150);
  EXPECT_EQ(p2.at(75, 10, 0), 255);
  EXPECT_EQ(p2.at(75, 10, 1), 0);
  EXPECT_EQ(p2.at(75, 90, 1), 255);
}

// The gray render is Pillow's luma of the RGB render, byte for byte, at the same size, rotation
// included.
TEST(Pdf, GrayRenderIsTheLumaOfTheRgbRender) {
  const PdfDocument doc = PdfDocument::open(fixture("two_pages.pdf"));
  for (int i = 0; i < 2; ++i)
    for (double dpi : {72.0, 144.0}) {
      const RgbImage rgb = doc.render_page(i, dpi);
      const GrayImage gray = doc.render_page_gray(i, dpi);
      ASSERT_EQ(gray.width, rgb.width);
      ASSERT_EQ(gray.height, rgb.height);
      EXPECT_EQ(gray.pixels, gray_bytes(rgb)) << "page " << i + 1 << " at " << dpi << " DPI";
      EXPECT_GT(std::count_if(gray.pixels.begin(), gray.pixels.end(), [](uint8_t v) { return v < 128; }), 100);
    }
  EXPECT_EQ(doc.render_page_gray(0, 144).row(5)[5], 255);  // white paper
  expect_invalid([&] { doc.render_page_gray(2); }, {"page 3", "two_pages.pdf", "2 pages"});
  expect_invalid([&] { doc.render_page_gray(1, 1.0); }, {"page 2", "two_pages.pdf", "between 2 and 16384"});
}

TEST(Pdf, BadFilesAreInvalidInputNamingTheFile) {
  expect_invalid([] { PdfDocument::open(fixture("missing.pdf")); }, {"missing.pdf", "cannot open"});
  expect_invalid([] { PdfDocument::open(fixture("corrupt.pdf")); }, {"corrupt.pdf", "corrupt"});
  expect_invalid([] { PdfDocument::open(fixture("not_a_pdf.pdf")); }, {"not_a_pdf.pdf", "corrupt or not a PDF"});
  expect_invalid([] { PdfDocument::open(fixture("encrypted.pdf")); }, {"encrypted.pdf", "password"});
  expect_invalid([] { PdfDocument::open(fixture("zero_pages.pdf")); }, {"zero_pages.pdf", "no pages"});
}

// A page whose box no int holds (document_fuzz's reproducer: a MediaBox of 6.7e23 points) is refused
// naming the file and the page; converting its pixel size was undefined (UBSan). The page before it
// still renders.
TEST(Pdf, APageTooLargeForAnyBitmapIsInvalidInput) {
  const PdfDocument doc = PdfDocument::open(fixture("huge_mediabox.pdf"));
  ASSERT_EQ(doc.page_count(), 2);
  expect_invalid([&] { doc.page_pixel_size(1, 24); }, {"huge_mediabox.pdf", "page 2", "too large to render"});
  const auto [w, h] = doc.page_pixel_size(0, 72);
  EXPECT_EQ(w, 200);
  EXPECT_EQ(h, 100);
}

// The encrypted fixture is real encryption, not just a broken file: poppler opens it with the
// user password.
TEST(Pdf, EncryptedFixtureOpensWithItsPassword) {
  std::unique_ptr<poppler::document> doc(poppler::document::load_from_file(fixture("encrypted.pdf"), "", "secret"));
  ASSERT_TRUE(doc);
  EXPECT_FALSE(doc->is_locked());
  EXPECT_EQ(doc->pages(), 1);
}

// A PDF with only an owner password (permissions) opens without one, as in poppler's and
// pdftotext's tools: it is read, its encrypted content decrypted (the green square is drawn).
TEST(Pdf, OwnerPasswordOnlyPdfIsRead) {
  const PdfDocument doc = PdfDocument::open(fixture("owner_only.pdf"));
  EXPECT_EQ(doc.page_count(), 1);
  const RgbImage p = doc.render_page(0, 72);
  ASSERT_EQ(p.width, 100);
  EXPECT_EQ(p.at(50, 50, 0), 0);
  EXPECT_EQ(p.at(50, 50, 1), 255);
  EXPECT_EQ(p.at(5, 5, 1), 255);
  EXPECT_EQ(p.at(5, 5, 0), 255);  // white outside the square
}

TEST(Pdf, BadPageIndexOrDpi) {
  const PdfDocument doc = PdfDocument::open(fixture("two_pages.pdf"));
  expect_invalid([&] { doc.render_page(2); }, {"page 3", "two_pages.pdf", "2 pages"});
  expect_invalid([&] { doc.render_page(-1); }, {"two_pages.pdf"});
  expect_invalid([&] { doc.render_page(0, 0.0); }, {"DPI", "two_pages.pdf"});
  // 200 pt at 2000 DPI is 5556 px: fine; the 100 pt page at 2 DPI is 3 px: fine; 1 DPI is too small.
  EXPECT_EQ(doc.page_pixel_size(0, 2000).first, 5556);
  expect_invalid([&] { doc.render_page(1, 1.0); }, {"page 2", "two_pages.pdf", "between 2 and 16384"});
}

TEST(PageRange, ParsesSinglesRangesAndLists) {
  EXPECT_EQ(parse_page_range("3", 5), (std::vector<int>{2}));
  EXPECT_EQ(parse_page_range("1-20", 20).size(), 20u);
  EXPECT_EQ(parse_page_range("1-20", 20).back(), 19);
  EXPECT_EQ(parse_page_range("2,5-7", 9), (std::vector<int>{1, 4, 5, 6}));
  EXPECT_EQ(parse_page_range(" 4 - 5 , 1 ", 5), (std::vector<int>{3, 4, 0}));
  EXPECT_EQ(parse_page_range("4-", 6), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(all_pages(3), (std::vector<int>{0, 1, 2}));
}

TEST(PageRange, RejectsRangesOutsideTheDocument) {
  expect_invalid([] { parse_page_range("1-20", 12); }, {"'1-20'", "12 pages", "page 20 is beyond the last page"});
  expect_invalid([] { parse_page_range("0", 3); }, {"'0'", "3 pages"});
  expect_invalid([] { parse_page_range("5-3", 9); }, {"'5-3'", "backwards"});
  expect_invalid([] { parse_page_range("", 9); }, {"empty"});
  expect_invalid([] { parse_page_range("2,,3", 9); }, {"'2,,3'"});
  expect_invalid([] { parse_page_range("a", 9); }, {"'a'", "not a page number"});
  expect_invalid([] { parse_page_range("2,1-3", 9); }, {"page 2", "twice"});
  expect_invalid([] { parse_page_range("2", 1); }, {"(the document has 1 page)"});
}

}  // namespace
}  // namespace folio

namespace folio {
namespace {

TEST(PageSource, PdfAndImageInputs) {
  const PageSource pdf = PageSource::open(doc_test::fixture("two_pages.pdf"), 72);
  EXPECT_TRUE(pdf.is_pdf());
  EXPECT_EQ(pdf.page_count(), 2);
  EXPECT_EQ(pdf.page(1).width, 150);
  const PageSource png = PageSource::open(doc_test::fixture("orient_6.png"));
  EXPECT_FALSE(png.is_pdf());
  EXPECT_EQ(png.page_count(), 1);
  EXPECT_EQ(png.page(0).width, 3);
  doc_test::expect_invalid([&] { png.page(1); }, {"page 2", "orient_6.png", "1 page)"});
  doc_test::expect_invalid([] { PageSource::open(doc_test::fixture("not_a_pdf.pdf")); }, {"not_a_pdf.pdf"});
  doc_test::expect_invalid([] { PageSource::open(doc_test::fixture("encrypted.pdf")); }, {"encrypted.pdf", "password"});
}

}  // namespace
}  // namespace folio
