// folio-mini-ocr 2 behind POST /v1/ocr on loopback (the tiny random model of
// tests/fixtures/mini2/structure/model): the served markdown is what run_ocr writes for the same
// page, and so is the second request's, which reuses the prepared pass: each sequence decodes with
// its own line cursors and markdown writer (OcrModel::fresh_decoding).
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "runtime/ocr_mini2.h"
#include "server/base64.h"
#include "runtime/ocr_pipeline.h"
#include "server/service.h"
#include "test_base64.h"

namespace folio {
namespace {

const std::string kModel = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure/model";
const std::string kPage = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/layout_page.png";
const std::string kFigurePage = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/figure_page.png";

// The tiny model served on loopback (f32 KV, one thread, `tune` applied to the config), and the
// page posted to /v1/ocr.
struct Served {
  Service svc;
  httplib::Client cli;
  std::string body;
  explicit Served(const std::function<void(ServerConfig&)>& tune = {}, const std::string& page = kPage)
      : svc(config(tune)), cli("127.0.0.1", start(svc)) {
    cli.set_read_timeout(120, 0);
    std::ifstream f(page, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), {});
    body = nlohmann::json{{"file", test_base64(bytes)}, {"filename", "page.png"}}.dump();
  }
  ~Served() { svc.shutdown(); }
  static ServerConfig config(const std::function<void(ServerConfig&)>& tune) {
    ServerConfig c;
    c.model.path = kModel;
    c.server.port = 0;
    c.inference.kv_dtype = "f32";
    c.inference.threads = 1;
    if (tune) tune(c);
    return c;
  }
  static int start(Service& s) {
    s.bind();
    s.start();
    s.load();
    return s.port();
  }
  // The answer's JSON (a failed request fails the test and returns null).
  nlohmann::json ocr() {
    auto r = cli.Post("/v1/ocr", body, "application/json");
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, 200) << r->body;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
};

// A page with figures (tests/fixtures/mini2/figure_page.png: two plots and a terminal): each image
// block comes back with the name the markdown links it by and its picture, a PNG of the box's size.
TEST(OcrMini2Http, FiguresComeBackAsPngsNamedByTheMarkdown) {
  Served served({}, kFigurePage);
  const nlohmann::json j = served.ocr();
  int figures = 0;
  for (const auto& b : j["pages"][0]["blocks"]) {
    if (b["label"] != "image") continue;
    const std::string name = "page-1-figure-" + std::to_string(++figures) + ".png";
    EXPECT_EQ(b["file"], name);
    EXPECT_NE(j["markdown"].get<std::string>().find("](" + name + ")"), std::string::npos) << j["markdown"];
    const DataUri png = parse_data_uri(b["data"].get<std::string>(), "figure");
    EXPECT_EQ(png.media_type, "image/png");
    ASSERT_GT(png.bytes.size(), 24u);
    EXPECT_EQ(png.bytes.substr(1, 3), "PNG");
    auto be32 = [&](size_t at) {
      return (uint32_t(uint8_t(png.bytes[at])) << 24) | (uint32_t(uint8_t(png.bytes[at + 1])) << 16) |
             (uint32_t(uint8_t(png.bytes[at + 2])) << 8) | uint32_t(uint8_t(png.bytes[at + 3]));
    };
    const auto box = b["boxes"][0].get<std::vector<int>>();
    EXPECT_EQ(be32(16), uint32_t(box[2] - box[0]));  // IHDR width, height
    EXPECT_EQ(be32(20), uint32_t(box[3] - box[1]));
  }
  EXPECT_EQ(figures, 3) << j.dump(1);
}

TEST(OcrMini2Http, ServedMarkdownIsRunOcrsAndStaysSoWhenThePassIsReused) {
  auto model = MiniOcr2Model::load(kModel);
  ThreadPool threads(1);
  OcrOptions opt;
  opt.kv_dtype = DType::F32;
  const OcrResult want = run_ocr(*model, OcrPages::open({kPage}, "", model->pdf_dpi()), opt, threads);
  ASSERT_FALSE(want.markdown.empty());
  Served served;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round ? "second request (prepared pass reused)" : "first request");
    const nlohmann::json j = served.ocr();
    EXPECT_EQ(j["markdown"], want.markdown);
    EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
    if (round == 1) {
      EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], want.stats.reference_tokens);
    }
  }
}

// attention.kv_keep: the served reference is compressed as run_ocr's is (less KV held while
// decoding than the plain run, another answer on this tiny model), and a second request, whose page
// KV comes from the prefix cache (kept before compression), is compressed the same way (its
// observation window is prefilled again), so its answer is the same.
TEST(OcrMini2Http, CompressedReferenceServesRunOcrsMarkdownFreshAndReused) {
  auto model = MiniOcr2Model::load(kModel);
  ThreadPool threads(1);
  OcrOptions plain;
  plain.kv_dtype = DType::F32;
  OcrOptions opt = plain;
  opt.policy.keep = 0.25;
  opt.policy.observe = 1;  // the closing BOS: every page row may go
  const OcrPages pages = OcrPages::open({kPage}, "", model->pdf_dpi());
  const OcrResult base = run_ocr(*model, pages, plain, threads);
  const OcrResult want = run_ocr(*model, pages, opt, threads);
  ASSERT_FALSE(want.markdown.empty());
  EXPECT_LT(want.stats.kv_bytes_decoding_max, base.stats.kv_bytes_decoding_max);
  ASSERT_NE(want.markdown, base.markdown);  // compression changes what this tiny model writes
  Served served([](ServerConfig& c) {
    c.attention.kv_keep = 0.25;
    c.attention.kv_observe = 1;
  });
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round ? "second request (pages from the prefix cache)" : "first request");
    const nlohmann::json j = served.ocr();
    EXPECT_EQ(j["markdown"], want.markdown);
    EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
  }
  // The second request took the page's KV from the prefix cache, kept before compression; the
  // closing part (the observation window, one token) was prefilled again.
  auto m = served.cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("folio_prefix_cache_hits_total 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("folio_prefix_cache_reused_tokens_total " + std::to_string(want.stats.reference_tokens - 1) + "\n"),
            std::string::npos);
}

}  // namespace
}  // namespace folio
