// markdown_blocks: a mini model's page of markdown as labelled blocks, and page_markdown of them
// the same bytes again.
#include <gtest/gtest.h>

#include "doc/markdown_blocks.h"
#include "doc/ocr_markdown.h"

namespace folio {
namespace {

std::vector<std::string> labels(const std::vector<OcrBlock>& blocks) {
  std::vector<std::string> out;
  for (const OcrBlock& b : blocks) out.push_back(b.label);
  return out;
}

TEST(MarkdownBlocks, EachBlockLabelledByHowItStarts) {
  const std::string md =
      "# Title\n\nA paragraph\nwith two lines.\n\n## Section\n\n### Sub\n\n- one\n- two\n\n1. first\n2. second\n\n"
      "| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nint x;\n\nint y;\n```\n\nThe end.";
  const std::vector<OcrBlock> b = markdown_blocks(md);
  EXPECT_EQ(labels(b), (std::vector<std::string>{"title", "text", "sub_title", "sub_title", "list", "list", "table", "code", "text"}));
  EXPECT_EQ(b[1].text, "A paragraph\nwith two lines.");
  EXPECT_EQ(b[7].text, "```\nint x;\n\nint y;\n```") << "a blank line inside a fence does not cut";
  for (const OcrBlock& x : b) EXPECT_TRUE(x.boxes.empty());
  EXPECT_EQ(page_markdown(OcrPage{b}), md);
}

TEST(MarkdownBlocks, PageMarkdownOfTheBlocksIsTheSameBytes) {
  for (const std::string& md : {std::string(""), std::string("one line"), std::string("a\n\n\nb"), std::string("a\n\n\n\nb\n\nc"),
                               std::string("\n\nlead"), std::string("trail\n\n"), std::string("```\nopen fence\n\nnever closed"),
                               std::string("- item\n\n- item after a blank")}) {
    const std::vector<OcrBlock> b = markdown_blocks(md);
    EXPECT_EQ(page_markdown(OcrPage{b}), md) << "'" << md << "'";
    for (const OcrBlock& x : b) EXPECT_FALSE(x.text.empty());
  }
  EXPECT_TRUE(markdown_blocks("").empty());
  EXPECT_EQ(markdown_blocks("a\n\n\nb").size(), 2u);
}

}  // namespace
}  // namespace folio
