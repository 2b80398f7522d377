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

namespace folio {
namespace {

const std::string kModel = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure/model";
const std::string kPage = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/layout_page.png";

std::string base64(const std::string& in) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += a[(v >> s) & 63];
  }
  const size_t rest = in.size() - i;
  if (rest) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (rest == 2) v |= uint8_t(in[i + 1]) << 8;
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += rest == 2 ? a[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

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
  const std::string body = nlohmann::json{{"file", base64(bytes)}, {"filename", "page.png"}}.dump();
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
