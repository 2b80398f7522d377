// run_ocr_pages on folio-mini-ocr 2's small random fixture model (tests/fixtures/mini2/structure/
// model: one action per line, so a pass's length is its pages' lines): pages reach the sink in page
// order even when a later pass decoding side by side ends first; the documents written page by page
// (OcrDocumentWriter) are run_ocr's markdown and JSON; an error in the middle of the document
// leaves neither a destination file nor a temporary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "doc/ocr_document_writer.h"
#include "doc/ocr_markdown.h"
#include "runtime/ocr_mini2.h"
#include "runtime/ocr_pipeline.h"
#include "../io/io_test_util.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure/model";
const std::string kPage = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/layout_page.png";

MiniOcr2Model& model() {
  static std::unique_ptr<MiniOcr2Model> m = MiniOcr2Model::load(kModel);
  return *m;
}

OcrPages copies(int n) { return OcrPages::open(std::vector<std::string>(static_cast<size_t>(n), kPage), {}, model().pdf_dpi()); }

// Passes of two pages, two decoding side by side.
OcrOptions two_by_two() {
  OcrOptions o;
  o.pages_per_pass = 2;
  o.passes_in_flight = 2;
  return o;
}

struct Recorder : OcrPageSink {
  std::vector<size_t> order;
  std::vector<OcrPage> pages;
  void page(size_t index, OcrPage page) override {
    order.push_back(index);
    pages.push_back(std::move(page));
  }
};

// What `folio ocr` does: each page to the writer with its JSON entry.
struct WriterSink : OcrPageSink {
  WriterSink(OcrDocumentWriter& w, const OcrPages& p) : writer(w), pages(p) {}
  void page(size_t index, OcrPage page) override {
    writer.page(index, page, ocr_page_entry(pages, index, page));
    ++handed;
  }
  OcrDocumentWriter& writer;
  const OcrPages& pages;
  size_t handed = 0;
};

TEST(OcrPageSink, PagesComeInPageOrderWhenALaterPassEndsFirst) {
  ThreadPool threads(2);
  const OcrPages pages = copies(3);  // passes: pages 1-2 and page 3
  OcrOptions o = two_by_two();
  Recorder rec;
  const OcrSummary s = run_ocr_pages(model(), pages, o, threads, rec);
  // Both passes start together (two in flight, each prefilled before either decodes) and take a
  // token each per step, so the second, one page long, ends first.
  ASSERT_EQ(s.stats.pass_tokens.size(), 2u);
  ASSERT_GT(s.stats.pass_tokens[0], s.stats.pass_tokens[1]);
  EXPECT_EQ(rec.order, (std::vector<size_t>{0, 1, 2}));
  // The pages and figures of one pass after another.
  o.passes_in_flight = 1;
  const OcrResult one = run_ocr(model(), pages, o, threads);
  ASSERT_EQ(rec.pages.size(), one.pages.size());
  for (size_t i = 0; i < rec.pages.size(); ++i) EXPECT_EQ(page_markdown(rec.pages[i]), one.page_markdown[i]) << "page " << i;
  EXPECT_EQ(s.stats.pass_tokens, one.stats.pass_tokens);
  EXPECT_EQ(s.stats.stop_reasons, one.stats.stop_reasons);
  EXPECT_EQ(s.stats.reference_tokens, one.stats.reference_tokens);
  EXPECT_EQ(s.warnings, one.warnings);
}

TEST(OcrPageSink, WrittenPageByPageIsRunOcrsMarkdownAndJson) {
  ThreadPool threads(2);
  testing::TempDir dir;
  const OcrPages pages = copies(5);
  const OcrOptions o = two_by_two();
  OcrDocumentWriter writer({dir.file("out.md"), nullptr, dir.file("out.json")}, pages.size(), ocr_json_head(model(), o));
  WriterSink sink(writer, pages);
  const OcrSummary s = run_ocr_pages(model(), pages, o, threads, sink);
  writer.finish(ocr_json_tail(model(), o, s));
  const OcrResult r = run_ocr(model(), pages, o, threads);
  ASSERT_FALSE(r.markdown.empty());
  EXPECT_EQ(testing::read_bytes(dir.file("out.md")), r.markdown + (r.markdown.back() == '\n' ? "" : "\n"));
  // Times and the peak RSS differ between two runs; the rest of the stats do not, and with the
  // streamed run's stats the whole document is the same bytes.
  const nlohmann::json streamed = nlohmann::json::parse(testing::read_bytes(dir.file("out.json")));
  for (const char* k : {"pages", "passes", "policy", "reference_tokens", "decode_tokens", "kv_bytes_peak", "stop_reasons"})
    EXPECT_EQ(streamed["stats"][k], r.json["stats"][k]) << k;
  nlohmann::json want = r.json;
  want["stats"] = streamed["stats"];
  EXPECT_EQ(testing::read_bytes(dir.file("out.json")), want.dump(2) + "\n");
  EXPECT_EQ(dir.entries(), 2u) << "no temporary left";
}

// The decoder fails once pages are written (here a progress callback throws, as any step of the
// run could): the error comes through and neither file, nor a temporary, is left.
TEST(OcrPageSink, AnErrorMidDocumentLeavesNoFile) {
  ThreadPool threads(2);
  testing::TempDir dir;
  const OcrPages pages = copies(5);
  const OcrOptions o = two_by_two();
  size_t handed = 0;
  try {
    OcrDocumentWriter writer({dir.file("out.md"), nullptr, dir.file("out.json")}, pages.size(), ocr_json_head(model(), o));
    WriterSink sink(writer, pages);
    OcrCallbacks cb;
    cb.on_progress = [&](const OcrProgress&) {
      handed = sink.handed;
      if (sink.handed >= 2) throw Error(Error::Kind::Internal, "the decoder failed");
    };
    run_ocr_pages(model(), pages, o, threads, sink, cb);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the decoder failed");
  }
  EXPECT_GE(handed, 2u) << "the error came in the middle of the document";
  EXPECT_LT(handed, pages.size());
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace folio
