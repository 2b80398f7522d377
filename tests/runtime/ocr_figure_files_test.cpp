// crop_figures and its helpers on a page made here: an image block (as Unlimited-OCR's grounding or
// folio-mini-ocr's figure finder writes it, a box normalised to 0..999) is cut from the rendered page
// at box_to_pixels of its box, named by page and place, and linked with the caption beside it (or
// "Figure N" counting the document's figures); blocks that are no figures are left alone.
#include "runtime/ocr_figure_files.h"

#include <gtest/gtest.h>

#include "doc/ocr_markdown.h"

namespace folio {
namespace {

// A 200 x 100 white page with a red rectangle at pixels [50, 20) - [150, 60).
RgbImage red_box_page() {
  RgbImage page(200, 100, 255);
  for (int y = 20; y < 60; ++y)
    for (int x = 50; x < 150; ++x) {
      uint8_t* p = page.pixels.data() + (size_t(y) * 200 + x) * 3;
      p[1] = p[2] = 0;
    }
  return page;
}

TEST(OcrFigureFiles, CropsEachImageBlockAtItsBoxAndLinksItWithItsCaption) {
  const RgbImage page = red_box_page();
  OcrPage p;
  p.blocks = {{"text", {}, "Some text.", "", ""},
              {"image", {{250, 200, 750, 600}}, "", "", ""},  // pixels [50, 20) - [150, 60)
              {"sub_title", {}, "## Figure 3: A red box.", "", ""},
              {"text", {}, "Plain words.", "", ""},
              {"image", {{0, 0, 999, 999}}, "", "", ""},
              {"text", {}, "No caption here.", "", ""}};
  size_t numbered = 4;  // figures earlier in the document
  const std::vector<OcrFigureCrop> crops = crop_figures(page, 1, p, "doc_files/", numbered);
  ASSERT_EQ(crops.size(), 2u);
  EXPECT_EQ(numbered, 6u);
  EXPECT_EQ(crops[0].name, "page-2-figure-1.png");
  EXPECT_EQ(crops[0].box, (OcrBox{50, 20, 150, 60}));
  ASSERT_EQ(crops[0].image.width, 100);
  ASSERT_EQ(crops[0].image.height, 40);
  EXPECT_EQ(crops[0].image.pixels[0], 255);  // red throughout
  EXPECT_EQ(crops[0].image.pixels[1], 0);
  EXPECT_EQ(crops[0].image.pixels.back(), 0);
  EXPECT_EQ(crops[1].name, "page-2-figure-2.png");
  EXPECT_EQ(crops[1].image.width, 200);
  EXPECT_EQ(p.blocks[1].image_file, "doc_files/page-2-figure-1.png");
  EXPECT_EQ(p.blocks[1].image_alt, "Figure 3: A red box.");
  EXPECT_EQ(p.blocks[4].image_alt, "Figure 6");  // no caption beside it
  EXPECT_TRUE(p.blocks[0].image_file.empty());
  const std::string md = page_markdown(p);
  EXPECT_NE(md.find("![Figure 3: A red box.](doc_files/page-2-figure-1.png)"), std::string::npos) << md;
  EXPECT_EQ(md.find("<!-- image"), std::string::npos) << md;
}

TEST(OcrFigureFiles, APageWithoutFiguresGivesNoCrop) {
  OcrPage p;
  p.blocks = {{"text", {}, "Figure 1: words only.", "", ""}, {"image", {}, "", "", ""}};  // an image block without a box
  size_t numbered = 0;
  EXPECT_FALSE(has_figures(p));
  EXPECT_TRUE(crop_figures(red_box_page(), 0, p, "", numbered).empty());
  EXPECT_EQ(numbered, 0u);
}

TEST(OcrFigureFiles, CaptionsAreTheirFirstLineAndBracketsStayOutOfTheLink) {
  EXPECT_EQ(figure_caption("Figure 1: Decode rate [tokens/s].\nmore"), "Figure 1: Decode rate (tokens/s).");
  EXPECT_EQ(figure_caption("**Fig. 2.** A plot"), "Fig. 2.** A plot");
  EXPECT_EQ(figure_caption("## FIGURE 12 Results"), "FIGURE 12 Results");
  EXPECT_EQ(figure_caption("Figures show the data"), "");
  EXPECT_EQ(figure_caption("See Figure 2 below"), "");
  EXPECT_EQ(figure_dir_for("out/doc.md"), "out/doc_files");
  EXPECT_EQ(figure_dir_for("doc.markdown"), "doc_files");
}

}  // namespace
}  // namespace folio
