// Long documents on the shipped mini model: composed held-out documents, and the rolling reference
// that reads any number of pages with the KV of a few.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "runtime/default_model.h"
#include "runtime/ocr_accuracy.h"
#include "runtime/ocr_mini.h"
#include "runtime/ocr_pipeline.h"

namespace folio {
namespace {

const std::string kSets = std::string(FOLIO_SOURCE_DIR) + "/data/heldout-grid";

TEST(ComposedDoc, CyclesThroughTheHeldOutPages) {
  const HeldoutDoc d = composed_heldout_doc(kSets, 100);
  // 3 x 20 pages of p20, 20 of p1, then p20's first document again.
  ASSERT_EQ(d.files.size(), 24u);
  EXPECT_EQ(d.files[0], d.files[23]);
  EXPECT_EQ(d.page_range, "1-100");
  EXPECT_EQ(split_text_pages(d.text, "<page>").size(), 100u);
  const HeldoutDoc first = heldout_docs(kSets, 20, 1)[0];
  EXPECT_EQ(split_text_pages(d.text, "<page>")[0], split_text_pages(first.text, "<page>")[0]);
  EXPECT_EQ(split_text_pages(d.text, "<page>")[80], split_text_pages(first.text, "<page>")[0]);
  const OcrPages pages = OcrPages::open(d.sources(), d.page_range, 72);
  EXPECT_EQ(pages.size(), 100u);
  EXPECT_THROW(composed_heldout_doc(kSets, 0), Error);
}

struct OcrRun {
  OcrResult result;
  CerCount cer;
};

OcrRun read(const std::string& policy, int pages, int64_t resident = 1) {
  static std::unique_ptr<MiniOcrModel> m = MiniOcrModel::load(shipped_path("models/folio-mini-ocr"));
  const HeldoutDoc d = composed_heldout_doc(kSets, pages);
  const OcrPages p = OcrPages::open(d.sources(), d.page_range, m->pdf_dpi());
  ThreadPool threads(2);
  OcrOptions o;
  o.policy = KVPolicy::parse(policy, 128);
  o.policy.resident_pages = resident;
  o.kv_dtype = DType::BF16;
  OcrRun r{run_ocr(*m, p, o, threads), {}};
  r.cer = text_cer(r.result.text, d.text, "<page>");
  return r;
}

// Three pages, one resident at a time: the whole document is read in one pass, every page comes
// out, accuracy stays that of the model, and the KV holds about one page instead of three.
TEST(RollingOcr, ReadsEveryPageWithOnePageResident) {
  const OcrRun rolling = read("rolling", 3), rswa = read("rswa", 3);
  EXPECT_EQ(rolling.result.stats.passes, 1u);
  EXPECT_EQ(rolling.result.pages.size(), 3u);
  EXPECT_TRUE(rolling.result.warnings.empty());
  EXPECT_LT(rolling.cer.cer(), 0.04);
  EXPECT_LT(rolling.cer.cer(), rswa.cer.cer() + 0.01);
  EXPECT_LT(rolling.result.stats.kv_bytes_peak, rswa.result.stats.kv_bytes_peak * 6 / 10);
  // The reference counts every page that entered.
  EXPECT_EQ(rolling.result.stats.reference_tokens, rswa.result.stats.reference_tokens);
}

TEST(RollingOcr, RefusesWhatItCannotDo) {
  std::unique_ptr<MiniOcrModel> m = MiniOcrModel::load(shipped_path("models/folio-mini-ocr"));
  const OcrPages p = OcrPages::open({std::string(FOLIO_SOURCE_DIR) + "/examples/sample-3page.pdf"}, "", m->pdf_dpi());
  ThreadPool threads(1);
  OcrOptions o;
  o.policy = KVPolicy::parse("rolling", 128);
  o.pages_per_pass = 1;
  EXPECT_THROW(run_ocr(*m, p, o, threads), Error);  // a rolling pass reads the whole document
  o.pages_per_pass = 0;
  o.policy.resident_pages = 500;  // pages sharing a page code would be resident together
  EXPECT_THROW(run_ocr(*m, p, o, threads), Error);
}

// A tiered reference through the whole pipeline: pages leave the pool for a small RAM tier and a
// file, sparse attention reads them there, and the tokens are exactly those of the pool alone.
TEST(TieredOcr, OffloadedPagesReadTheSameTokens) {
  static std::unique_ptr<MiniOcrModel> m = MiniOcrModel::load(shipped_path("models/folio-mini-ocr"));
  const HeldoutDoc d = composed_heldout_doc(kSets, 3);
  const OcrPages p = OcrPages::open(d.sources(), d.page_range, m->pdf_dpi());
  ThreadPool threads(2);
  OcrOptions o;
  o.policy = KVPolicy::parse("sparse", 128);
  o.policy.top_k = 4;
  o.kv_dtype = DType::BF16;
  const OcrResult pool_only = run_ocr(*m, p, o, threads);
  const std::string dir = testing::TempDir() + "/folio-offload-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  o.kv_offload_dir = dir;
  o.kv_hot_bytes = 256 << 10;  // less than one page: most reads come from the file
  const OcrResult tiered = run_ocr(*m, p, o, threads);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(tiered.tokens, pool_only.tokens);
  EXPECT_GT(tiered.stats.kv_offloaded_bytes_peak, 0u);
  EXPECT_LT(tiered.stats.kv_bytes_peak, pool_only.stats.kv_bytes_peak) << "pages left the pool";
  EXPECT_GT(tiered.stats.kv_store_acquires, 0u);
  EXPECT_GT(tiered.stats.kv_store_cold_reads + tiered.stats.kv_store_promotions, 0u) << "the file tier was read";
  EXPECT_EQ(tiered.json["stats"]["kv_offloaded_bytes_peak"], tiered.stats.kv_offloaded_bytes_peak);
}

}  // namespace
}  // namespace folio
