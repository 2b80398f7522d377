// OcrDocumentWriter: the markdown and JSON written page by page are byte for byte what the whole
// document written at once is (document_markdown, ocr_to_json + dump(2)); pages out of order are
// refused; a failure (a missing directory, a full device, an abandoned document) leaves neither a
// destination nor a temporary.
#include "doc/ocr_document_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "doc/ocr_json.h"
#include "doc/ocr_markdown.h"
#include "../io/io_test_util.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Three pages as the model writes them: headings, a table, an image, an empty page, non-ASCII text.
std::vector<OcrPage> sample_pages() {
  std::vector<OcrPage> pages = parse_ocr_output(
      "<PAGE><|det|>title [100, 50, 900, 120]<|/det|># Annual Report\n"
      "<|det|>text [100, 150, 900, 400]<|/det|>First paragraph, \xc3\xa9t\xc3\xa9.\nSecond line.\n"
      "<PAGE><|det|>image [200, 450, 800, 700]<|/det|>\n"
      "<|det|>table [100, 720, 900, 950]<|/det|><table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>"
      "<PAGE>");
  EXPECT_EQ(pages.size(), 3u);
  return pages;
}

const std::vector<PageSize> kSizes = {{1275, 1650}, {1275, 1650}, {800, 600}};

// What `folio ocr` wrote before pages were streamed: the whole document at once.
std::string whole_markdown(const std::vector<OcrPage>& pages) {
  std::string md = document_markdown(pages);
  if (!md.empty() && md.back() != '\n') md += '\n';
  return md;
}
std::string whole_json(const std::vector<OcrPage>& pages, const json& head, const json& tail) {
  json j = ocr_to_json(pages, kSizes);
  for (const auto& [k, v] : head.items()) j[k] = v;
  for (const auto& [k, v] : tail.items()) j[k] = v;
  return j.dump(2) + "\n";
}

const json kHead = {{"model", "folio-mini-ocr-3"}, {"mode", "base"}};
const json kTail = {{"stats", {{"pages", 3}, {"stop_reasons", {"eos"}}}}, {"warnings", {"pages 1-3: something"}}};

void write_document(OcrDocumentWriter& w, const std::vector<OcrPage>& pages) {
  for (size_t i = 0; i < pages.size(); ++i) w.page(i, pages[i], ocr_page_to_json(pages[i], i, &kSizes[i]));
}

TEST(OcrDocumentWriter, PageByPageEqualsTheWholeDocument) {
  for (size_t n : {size_t{1}, size_t{3}}) {  // one page has no page markers
    testing::TempDir s;
    const std::vector<OcrPage> all = sample_pages();
    const std::vector<OcrPage> pages(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    OcrDocumentWriter w({s.file("out.md"), nullptr, s.file("out.json")}, pages.size(), kHead);
    write_document(w, pages);
    EXPECT_FALSE(fs::exists(s.file("out.md"))) << "nothing under the real names before finish()";
    EXPECT_FALSE(fs::exists(s.file("out.json")));
    w.finish(kTail);
    EXPECT_EQ(testing::read_bytes(s.file("out.md")), whole_markdown(pages)) << n << " page(s)";
    EXPECT_EQ(testing::read_bytes(s.file("out.json")), whole_json(pages, kHead, kTail)) << n << " page(s)";
    EXPECT_EQ(s.entries(), 2u) << "no temporary left";
  }
}

TEST(OcrDocumentWriter, MarkdownToAStreamAsPagesCome) {
  testing::TempDir s;
  const std::vector<OcrPage> pages = sample_pages();
  std::FILE* f = std::fopen(s.file("stdout.md").c_str(), "wb");
  ASSERT_NE(f, nullptr);
  OcrDocumentWriter w({"", f, ""}, pages.size(), kHead);
  w.page(0, pages[0], {});
  std::fflush(f);
  EXPECT_EQ(testing::read_bytes(s.file("stdout.md")), document_markdown_piece(pages[0], 0, 3));  // the first page, already
  w.page(1, pages[1], {});
  w.page(2, pages[2], {});
  w.finish({});
  std::fclose(f);
  EXPECT_EQ(testing::read_bytes(s.file("stdout.md")), whole_markdown(pages));
}

TEST(OcrDocumentWriter, PagesOutOfOrderAreRefused) {
  testing::TempDir s;
  const std::vector<OcrPage> pages = sample_pages();
  {
    OcrDocumentWriter w({s.file("out.md"), nullptr, s.file("out.json")}, pages.size(), kHead);
    w.page(0, pages[0], json::object());
    EXPECT_THROW(w.page(2, pages[2], json::object()), Error);
    EXPECT_THROW(w.finish(kTail), Error);  // page 1 and 2 never came
  }
  EXPECT_EQ(s.entries(), 0u);
}

TEST(OcrDocumentWriter, AMissingDirectoryFailsBeforeAnyPage) {
  testing::TempDir s;
  try {
    OcrDocumentWriter w({s.file("out.md"), nullptr, s.file("nowhere/out.json")}, 3, kHead);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--json: cannot write '" + s.file("nowhere/out.json") + "'", 0), 0u) << m;
    EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  }
  EXPECT_EQ(s.entries(), 0u) << "the markdown's temporary is gone too";
}

// A full disk: the JSON goes to /dev/full (written in place); the markdown, fine on its own, is
// not left behind either.
TEST(OcrDocumentWriter, AFullDiskLeavesNeitherFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  testing::TempDir s;
  const std::vector<OcrPage> pages = sample_pages();
  try {
    OcrDocumentWriter w({s.file("out.md"), nullptr, "/dev/full"}, pages.size(), kHead);
    write_document(w, pages);
    w.finish(kTail);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--json: cannot write '/dev/full'", 0), 0u) << m;
    EXPECT_NE(m.find("No space left on device"), std::string::npos) << m;
  }
  EXPECT_EQ(s.entries(), 0u);
}

// The run failed after two pages (the writer is dropped without finish()): nothing is left, and an
// older file of the same name stays as it was.
TEST(OcrDocumentWriter, AnAbandonedDocumentLeavesNothing) {
  testing::TempDir s;
  std::ofstream(s.file("out.json")) << "yesterday's";
  const std::vector<OcrPage> pages = sample_pages();
  {
    OcrDocumentWriter w({s.file("out.md"), nullptr, s.file("out.json")}, pages.size(), kHead);
    w.page(0, pages[0], json::object());
    w.page(1, pages[1], json::object());
  }
  EXPECT_FALSE(fs::exists(s.file("out.md")));
  EXPECT_EQ(testing::read_bytes(s.file("out.json")), "yesterday's");
  EXPECT_EQ(s.entries(), 1u);
}

}  // namespace
}  // namespace folio
