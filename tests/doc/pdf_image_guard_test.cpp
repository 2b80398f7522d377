// pdf_image_guard: an image XObject declaring more pixels than folio renders is refused before
// poppler sees the file (the fuzzing finding: poppler walked the 444 million rows an 11 KB file
// declared); what does not declare such an image passes, whatever else its bytes hold.
#include "doc/pdf_image_guard.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "doc/pdf_document.h"
#include "doc_test_util.h"

namespace folio {
namespace {

using doc_test::expect_invalid;
using doc_test::fixture;

std::string image_object(const std::string& size_keys) {
  return "3 0 obj\n<< /Type /XObject /Subtype /Image " + size_keys +
         " /ColorSpace /DeviceGray /BitsPerComponent 8 /DecodeParms << /Predictor 1 >> /Length 4 >>\nstream\nabcd\nendstream\nendobj\n";
}

TEST(PdfImageGuard, AnImageBeyondTheLargestPageIsRefusedNamingTheFile) {
  expect_invalid([] { check_pdf_images(image_object("/Width 16385 /Height 16384"), "a.pdf"); },
                 {"a.pdf", "16385 x 16384", "268435456"});
  expect_invalid([] { check_pdf_images("%PDF-1.4\n" + image_object("/Height\n444444352\r/Width 448"), "b.pdf"); },
                 {"b.pdf", "448 x 444444352"});
}

TEST(PdfImageGuard, WhatDeclaresNoSuchImagePasses) {
  EXPECT_NO_THROW(check_pdf_images(image_object("/Width 16384 /Height 16384"), "x"));  // the largest page
  EXPECT_NO_THROW(check_pdf_images(image_object("/Width 5 0 R /Height 9 0 R"), "x"));  // sizes not in the dictionary
  EXPECT_NO_THROW(check_pdf_images(image_object("/Widths 100000 /Height 100000"), "x"));  // no /Width of its own
  EXPECT_NO_THROW(check_pdf_images("<< /Subtype /Form /Width 100000 /Height 100000 >>\nstream\n", "x"));
  EXPECT_NO_THROW(check_pdf_images("<< /Subtype /ImageMask /Width 100000 /Height 100000 >>", "x"));
  EXPECT_NO_THROW(check_pdf_images("", "x"));
  EXPECT_NO_THROW(check_pdf_images("/Subtype /Image /Width", "x"));  // cut short
}

// The fuzzer's file (its steering bytes removed): open() refuses it at once, and the other fixture
// PDFs still open.
TEST(PdfImageGuard, TheFuzzersFileIsRefusedBeforeRendering) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_invalid([] { PdfDocument::open(fixture("huge_image.pdf")); }, {"huge_image.pdf", "448 x 444444352"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(PdfDocument::open(fixture("two_pages.pdf")).page_count(), 2);
}

}  // namespace
}  // namespace folio
