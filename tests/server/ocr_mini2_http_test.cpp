// folio-mini-ocr 2 behind POST /v1/ocr on loopback (the tiny random model of
// tests/fixtures/mini2/structure/model): the served markdown is what run_ocr writes for the same
// page, and so is the second request's, which reuses the prepared pass: each sequence decodes with
// its own line cursors and markdown writer (OcrModel::fresh_decoding).
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/ocr_mini2.h"
#include "runtime/ocr_pipeline.h"
#include "server/service.h"
#include "test_base64.h"

namespace folio {
namespace {

const std::string kModel = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure/model";
const std::string kPage = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/layout_page.png";

TEST(OcrMini2Http, ServedMarkdownIsRunOcrsAndStaysSoWhenThePassIsReused) {
  auto model = MiniOcr2Model::load(kModel);
  ThreadPool threads(1);
  OcrOptions opt;
  opt.kv_dtype = DType::F32;
  const OcrResult want = run_ocr(*model, OcrPages::open({kPage}, "", model->pdf_dpi()), opt, threads);
  ASSERT_FALSE(want.markdown.empty());

  ServerConfig c;
  c.model.path = kModel;
  c.server.port = 0;
  c.inference.kv_dtype = "f32";
  c.inference.threads = 1;
  Service svc(c);
  svc.bind();
  svc.start();
  svc.load();
  httplib::Client cli("127.0.0.1", svc.port());
  cli.set_read_timeout(120, 0);
  std::ifstream f(kPage, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  const std::string body = nlohmann::json{{"file", test_base64(bytes)}, {"filename", "page.png"}}.dump();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round ? "second request (prepared pass reused)" : "first request");
    auto r = cli.Post("/v1/ocr", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const nlohmann::json j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["markdown"], want.markdown);
    EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
    if (round == 1) {
      EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], want.stats.reference_tokens);
    }
  }
  svc.shutdown();
}

}  // namespace
}  // namespace folio
