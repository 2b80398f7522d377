// POST /v1/ocr and images in chat over real HTTP on loopback, against the shipped mini OCR model:
// the pages and markdown equal what run_ocr (`folio ocr`) gives for the same files, streaming
// reports the same pages one by one, reference reuse reports its cached tokens and counts in
// /metrics, and every bad input is a 4xx in OpenAI's error shape.
#include <gtest/gtest.h>

#include "kv/kv_dtype.h"
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "doc/image.h"
#include "doc/image_write.h"
#include "doc/pdf_document.h"
#include "kernels/cpu/matmul.h"
#include "runtime/default_model.h"
#include "runtime/model_factory.h"
#include "runtime/ocr_mini.h"
#include "runtime/ocr_pipeline.h"
#include "core/error.h"
#include "server/base64.h"
#include "server/ocr_job.h"
#include "server/service.h"
#include "http_test_util.h"
#include "test_base64.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string base64(const std::string& in) { return test_base64(in); }

std::vector<json> sse_events(const std::string& body, bool& done) {
  std::vector<json> out;
  done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    std::string data = ev.substr(6);
    EXPECT_FALSE(done) << "event after [DONE]";
    if (data == "[DONE]") done = true;
    else out.push_back(json::parse(data));
  }
  EXPECT_EQ(pos, body.size()) << "trailing bytes after the last event";
  return out;
}

class OcrHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("folio_ocr_http_test_" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    write_random_checkpoint(preset_config("llama", "tiny"), (*dir_ / "tiny").string(), 21, DType::F32);
    // Batch-independent rows (GEMV for every row count), as in the scheduler tests: then served
    // pages must equal run_ocr's exactly.
    saved_rows_ = kernels::matmul_gemm_min_rows();
    kernels::set_matmul_gemm_min_rows(int64_t{1} << 40);
    model_ = MiniOcrModel::load(shipped_path("models/folio-mini-ocr")).release();
    one_pdf_ = new std::string(std::string(FOLIO_SOURCE_DIR) + "/examples/sample-1page.pdf");
    three_pdf_ = new std::string(std::string(FOLIO_SOURCE_DIR) + "/examples/sample-3page.pdf");
    // Page 2 of the 3-page sample as a PNG, at the model's resolution.
    png_ = new std::string((*dir_ / "page2.png").string());
    write_png(PdfDocument::open(*three_pdf_).render_page(1, model_->pdf_dpi()), *png_);
  }
  static void TearDownTestSuite() {
    kernels::set_matmul_gemm_min_rows(saved_rows_);
    delete model_;
    fs::remove_all(*dir_);
    delete dir_;
    delete one_pdf_;
    delete three_pdf_;
    delete png_;
  }

  static ServerConfig config() {
    ServerConfig c;
    c.model.path = shipped_path("models/folio-mini-ocr");  // v1, as model_ (the default is v3)
    c.server.port = 0;
    c.inference.kv_dtype = "f32";
    c.inference.threads = 1;
    return c;
  }
  static std::unique_ptr<Service> serve(const ServerConfig& c) { return serve_loaded(c); }
  static httplib::Client client(const Service& s) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(120, 0);
    return c;
  }
  // What `folio ocr` gives for these files and pages.
  static OcrResult expected(const std::vector<std::string>& files, const std::string& pages = "") {
    ThreadPool threads(1);
    OcrOptions opt;
    opt.kv_dtype = DType::F32;
    return run_ocr(*model_, OcrPages::open(files, pages, model_->pdf_dpi()), opt, threads);
  }
  static json file_body(const std::string& path, const std::string& name) {
    return {{"file", base64(read_bytes(path))}, {"filename", name}};
  }
  // A 4xx answer in OpenAI's error shape with this code; returns the message.
  static std::string expect_error(const httplib::Result& r, int status, const std::string& code) {
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, status) << r->body;
    json j = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(j.contains("error")) << r->body;
    if (!j.contains("error")) return "";
    EXPECT_EQ(j["error"]["code"], code) << r->body;
    EXPECT_TRUE(j["error"]["type"].is_string());
    return j["error"]["message"].get<std::string>();
  }
  static void expect_pages_equal(const json& got_pages, const OcrResult& want, const std::vector<std::string>& sources) {
    ASSERT_EQ(got_pages.size(), want.pages.size());
    for (size_t i = 0; i < want.pages.size(); ++i) {
      SCOPED_TRACE("page " + std::to_string(i + 1));
      const json& w = want.json["pages"][i];
      EXPECT_EQ(got_pages[i]["page"], i + 1);
      EXPECT_EQ(got_pages[i]["markdown"], w["markdown"]);
      EXPECT_EQ(got_pages[i]["blocks"], w["blocks"]);
      EXPECT_EQ(got_pages[i]["width"], w["width"]);
      EXPECT_EQ(got_pages[i]["height"], w["height"]);
      EXPECT_EQ(got_pages[i]["source_page"], w["source_page"]);
      EXPECT_EQ(got_pages[i]["source"], sources[i]);
    }
  }

  static fs::path* dir_;
  static MiniOcrModel* model_;
  static std::string *one_pdf_, *three_pdf_, *png_;
  static int64_t saved_rows_;
};
fs::path* OcrHttp::dir_ = nullptr;
MiniOcrModel* OcrHttp::model_ = nullptr;
std::string* OcrHttp::one_pdf_ = nullptr;
std::string* OcrHttp::three_pdf_ = nullptr;
std::string* OcrHttp::png_ = nullptr;
int64_t OcrHttp::saved_rows_ = 0;

TEST_F(OcrHttp, JsonBase64MatchesRunOcrAndSecondRequestReusesTheReference) {
  auto svc = serve(config());
  auto cli = client(*svc);
  const OcrResult want = expected({*one_pdf_});
  ASSERT_FALSE(want.markdown.empty());
  const std::string body = file_body(*one_pdf_, "letter.pdf").dump();
  auto r = cli.Post("/v1/ocr", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "ocr");
  EXPECT_EQ(j["model"], "folio-mini-ocr");
  EXPECT_EQ(j["markdown"], want.markdown);
  expect_pages_equal(j["pages"], want, {"letter.pdf"});
  EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], want.stats.reference_tokens);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  // The same document again: its prepared reference is reused, and says so.
  auto again = cli.Post("/v1/ocr", body, "application/json");
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  json k = json::parse(again->body);
  EXPECT_EQ(k["markdown"], want.markdown);
  EXPECT_EQ(k["usage"]["prompt_tokens_details"]["cached_tokens"], want.stats.reference_tokens);
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric(m->body, "folio_reference_cache_hits_total"), 1);
  EXPECT_EQ(metric(m->body, "folio_reference_cache_misses_total"), 1);
  // ... and so is its KV: the second pass prefilled nothing.
  EXPECT_EQ(metric(m->body, "folio_prefix_cache_hits_total"), 1);
  EXPECT_EQ(metric(m->body, "folio_prefix_cache_misses_total"), 1);
  EXPECT_EQ(metric(m->body, "folio_prefix_cache_reused_tokens_total"), want.stats.reference_tokens);
  EXPECT_GT(metric(m->body, "folio_kv_bytes{tier=\"prefix_cache\"}"), 0);
  // Bytes of the kept reference: its rows (hidden floats each) and ids.
  const double rows = static_cast<double>(want.stats.reference_tokens);
  EXPECT_EQ(metric(m->body, "folio_reference_cache_bytes"), rows * (4.0 * model_->decoder().config().hidden + 4.0));
  // Counted once the response is written, which can be just after the client has it.
  std::string text = m->body;
  for (int i = 0; i < 200 && metric(text, "folio_http_requests_total{path=\"/v1/ocr\",status=\"200\"}") != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = cli.Get("/metrics")->body;
  }
  EXPECT_EQ(metric(text, "folio_http_requests_total{path=\"/v1/ocr\",status=\"200\"}"), 2);
  EXPECT_EQ(metric(m->body, "folio_kv_bytes{tier=\"ram\"}"), 0);
}

TEST_F(OcrHttp, NoCacheBudgetMeansNoReuse) {
  ServerConfig c = config();
  c.inference.reference_cache_bytes = 0;
  c.inference.prefix_cache_bytes = 0;
  auto svc = serve(c);
  auto cli = client(*svc);
  const std::string body = file_body(*one_pdf_, "a.pdf").dump();
  for (int i = 0; i < 2; ++i) {
    auto r = cli.Post("/v1/ocr", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  }
  const std::string m = cli.Get("/metrics")->body;
  EXPECT_EQ(metric(m, "folio_reference_cache_hits_total"), 0);
  EXPECT_EQ(metric(m, "folio_reference_cache_misses_total"), 2);
  EXPECT_EQ(metric(m, "folio_reference_cache_bytes"), 0);
  EXPECT_EQ(metric(m, "folio_prefix_cache_hits_total"), 0);
  EXPECT_EQ(metric(m, "folio_kv_bytes{tier=\"prefix_cache\"}"), 0);
}

// attention.type rolling: a document goes through one sequence with one page resident at a time, and
// reads as run_ocr reads it with the same policy; the same document again reuses the prepared pages.
TEST_F(OcrHttp, RollingReadsTheDocumentWithOnePageResident) {
  ServerConfig c = config();
  c.attention.type = "rolling";
  c.attention.resident_pages = 1;
  auto svc = serve(c);
  auto cli = client(*svc);
  ThreadPool threads(1);
  OcrOptions opt;
  opt.kv_dtype = DType::F32;
  opt.policy = {KVPolicyKind::Rolling, 128};
  opt.policy.resident_pages = 1;
  const OcrResult want = run_ocr(*model_, OcrPages::open({*three_pdf_}, "", model_->pdf_dpi()), opt, threads);
  ASSERT_EQ(want.pages.size(), 3u);
  const std::string body = file_body(*three_pdf_, "three.pdf").dump();
  for (int i = 0; i < 2; ++i) {
    auto r = cli.Post("/v1/ocr", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["markdown"], want.markdown) << "request " << i;
    expect_pages_equal(j["pages"], want, {"three.pdf", "three.pdf", "three.pdf"});
    EXPECT_EQ(j["stats"]["passes"], 1);
    // The reference holds the first page (and <bos>); the others entered as it left.
    EXPECT_LT(j["usage"]["prompt_tokens"].get<int64_t>() * 2, want.stats.reference_tokens);
  }
  const std::string m = cli.Get("/metrics")->body;
  EXPECT_EQ(metric(m, "folio_reference_cache_hits_total"), 1);
  EXPECT_EQ(metric(m, "folio_kv_bytes{tier=\"ram\"}"), 0);
  // One request at a time, each holding what run_ocr's rolling pass holds: one page and the window,
  // well under what rswa holds for the whole document.
  EXPECT_EQ(metric(m, "folio_kv_peak_bytes"), static_cast<double>(want.stats.kv_bytes_peak));
  OcrOptions dense;
  dense.kv_dtype = DType::F32;
  // While decoding (prefill's open segment holds whole blocks of kDefaultBlockTokens rows, which
  // for pages this small is most of the peak).
  EXPECT_LT(want.stats.kv_bytes_decoding_max * 2,
            run_ocr(*model_, OcrPages::open({*three_pdf_}, "", model_->pdf_dpi()), dense, threads).stats.kv_bytes_decoding_max);
}

// inference.kv_offload_dir: complete reference segments leave the pool for a RAM tier, then a file,
// as `folio ocr --kv-offload` does; the answer is the same, the pool holds less, and /metrics shows
// the store's tiers and reads. It needs the prefix cache off, and says so.
TEST_F(OcrHttp, KVOffloadServesTheSameAnswerWithLessInThePool) {
  ServerConfig c = config();
  c.inference.kv_offload_dir = (*dir_ / "offload").string();
  c.inference.kv_hot_bytes = 64 << 10;  // most of it goes to the file
  c.inference.prefix_cache_bytes = 0;
  auto svc = serve(c);
  auto cli = client(*svc);
  const OcrResult want = expected({*three_pdf_});
  auto r = cli.Post("/v1/ocr", file_body(*three_pdf_, "three.pdf").dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["markdown"], want.markdown);
  expect_pages_equal(j["pages"], want, {"three.pdf", "three.pdf", "three.pdf"});
  const std::string m = cli.Get("/metrics")->body;
  EXPECT_GT(metric(m, "folio_kv_offload_acquires_total"), 0);
  EXPECT_GT(metric(m, "folio_kv_offload_misses_total"), 0) << "the file tier was read";
  EXPECT_EQ(metric(m, "folio_kv_bytes{tier=\"offload_ram\"}"), 0) << "the request ended: its blocks left the store";
  EXPECT_LT(metric(m, "folio_kv_peak_bytes"), static_cast<double>(want.stats.kv_bytes_peak));

  ConfigSources both;
  both.flags["inference.kv_offload_dir"] = (*dir_ / "offload").string();
  try {
    load_server_config(both);
    ADD_FAILURE() << "the prefix cache is on by default: offload must be refused with it";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inference.prefix_cache_bytes"), std::string::npos) << e.what();
  }
}

// The KV policies and storage types of `folio ocr` also serve: sparse attention over quantised KV
// gives what run_ocr gives with the same settings, and the pool accounts the quantised blocks.
TEST_F(OcrHttp, SparseOverQuantisedKVMatchesRunOcr) {
  ServerConfig c = config();
  c.attention.type = "sparse";
  c.attention.sparse_top_k = 2;
  c.attention.sparse_unit_tokens = 16;
  c.inference.kv_dtype = "q8";
  c.inference.kv_dtype_window = "f16";
  auto svc = serve(c);
  auto cli = client(*svc);
  ThreadPool threads(1);
  OcrOptions opt;
  opt.policy = {KVPolicyKind::Sparse, 128, 2, 16};
  opt.kv_types = parse_kv_types("q8", "", "", "f16");
  const OcrResult want = run_ocr(*model_, OcrPages::open({*three_pdf_}, "", model_->pdf_dpi()), opt, threads);
  OcrOptions dense;
  dense.kv_dtype = DType::F32;
  ASSERT_NE(want.tokens, run_ocr(*model_, OcrPages::open({*three_pdf_}, "", model_->pdf_dpi()), dense, threads).tokens)
      << "top-2 of 16-token units over q8 should change something";
  auto r = cli.Post("/v1/ocr", file_body(*three_pdf_, "three.pdf").dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["markdown"], want.markdown);
  EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
  const std::string m = cli.Get("/metrics")->body;
  EXPECT_EQ(metric(m, "folio_kv_bytes{tier=\"ram\"}"), 0);
  EXPECT_GT(metric(m, "folio_kv_peak_bytes"), 0);
}

TEST_F(OcrHttp, MultipartFilesAndPageRange) {
  auto svc = serve(config());
  auto cli = client(*svc);
  // Pages numbered across both files: 1-3 from the PDF, 4 the PNG; read 3 and 4.
  const OcrResult want = expected({*three_pdf_, *png_}, "3-4");
  httplib::MultipartFormDataItems items = {
      {"file", read_bytes(*three_pdf_), "report.pdf", "application/pdf"},
      {"file", read_bytes(*png_), "scan.png", "image/png"},
      {"pages", "3-4", "", ""},
  };
  auto r = cli.Post("/v1/ocr", items);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["markdown"], want.markdown);
  expect_pages_equal(j["pages"], want, {"report.pdf", "scan.png"});
}

TEST_F(OcrHttp, StreamingSendsEachPageThenTheResult) {
  auto svc = serve(config());
  auto cli = client(*svc);
  const OcrResult want = expected({*three_pdf_});
  json body = file_body(*three_pdf_, "three.pdf");
  body["stream"] = true;
  auto r = cli.Post("/v1/ocr", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  bool done = false;
  auto events = sse_events(r->body, done);
  EXPECT_TRUE(done);
  ASSERT_EQ(events.size(), 4u) << r->body;
  json streamed = json::array();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i]["object"], "ocr.page");
    EXPECT_EQ(events[i]["index"], i);
    streamed.push_back(events[i]["page"]);
  }
  expect_pages_equal(streamed, want, {"three.pdf", "three.pdf", "three.pdf"});
  EXPECT_EQ(events[3]["object"], "ocr");
  EXPECT_EQ(events[3]["pages"], streamed);
  EXPECT_EQ(events[3]["markdown"], want.markdown);
}

// page_images: each page's image is the page the model read (the PNG of page 2 is that render,
// pixel for pixel; the PDF's pages at most kPageImageWidth wide); the closing event of a stream
// leaves them out, a whole answer keeps them; a bad value is a 400 naming the field.
TEST_F(OcrHttp, PageImagesAreThePagesAsTheModelReadThem) {
  auto svc = serve(config());
  auto cli = client(*svc);
  const OcrResult want = expected({*three_pdf_, *png_}, "2,4");
  httplib::MultipartFormDataItems items = {
      {"file", read_bytes(*three_pdf_), "report.pdf", "application/pdf"},
      {"file", read_bytes(*png_), "scan.png", "image/png"},
      {"pages", "2,4", "", ""},
      {"page_images", "true", "", ""},
      {"stream", "true", "", ""},
  };
  auto r = cli.Post("/v1/ocr", items);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  bool done = false;
  auto events = sse_events(r->body, done);
  ASSERT_EQ(events.size(), 3u);
  const RgbImage png = load_image(*png_);
  for (size_t i = 0; i < 2; ++i) {
    const std::string uri = events[i]["page"]["image"];
    const std::string prefix = "data:image/png;base64,";
    ASSERT_EQ(uri.rfind(prefix, 0), 0u);
    const std::string bytes = decode_base64(uri.substr(prefix.size()), "page image");
    const RgbImage img = decode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "page image");
    EXPECT_EQ(img.width, std::min(png.width, kPageImageWidth));
    EXPECT_EQ(img.height, static_cast<int>(int64_t{png.height} * img.width / png.width));
    if (png.width <= kPageImageWidth) {
      EXPECT_EQ(img.pixels, png.pixels) << "page " << i;  // both pages are page 2 of the PDF, rendered alike
    }
    EXPECT_EQ(events[i]["page"]["markdown"], want.page_markdown[i]);
  }
  EXPECT_FALSE(events[2]["pages"][0].contains("image"));
  EXPECT_EQ(events[2]["markdown"], want.markdown);

  json body = file_body(*three_pdf_, "three.pdf");
  body["page_images"] = true;
  auto whole = cli.Post("/v1/ocr", body.dump(), "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  for (const json& page : json::parse(whole->body)["pages"]) EXPECT_TRUE(page.contains("image"));
  body["page_images"] = "yes";
  auto bad = cli.Post("/v1/ocr", body.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("page_images"), std::string::npos) << bad->body;
}

TEST_F(OcrHttp, ConcurrentRequestsAreBatched) {
  auto svc = serve(config());
  const OcrResult want = expected({*one_pdf_});
  const std::string body = file_body(*one_pdf_, "x.pdf").dump();
  std::vector<std::future<std::string>> got;
  for (int i = 0; i < 3; ++i)
    got.push_back(std::async(std::launch::async, [&] {
      auto cli = client(*svc);
      auto r = cli.Post("/v1/ocr", body, "application/json");
      return r && r->status == 200 ? json::parse(r->body)["markdown"].get<std::string>() : std::string("failed");
    }));
  for (auto& f : got) EXPECT_EQ(f.get(), want.markdown);
  auto cli = client(*svc);
  EXPECT_GE(metric(cli.Get("/metrics")->body, "folio_batch_size_max"), 2);
}

TEST_F(OcrHttp, ChatImageUrlReadsTheImage) {
  auto svc = serve(config());
  auto cli = client(*svc);
  const OcrResult want = expected({*png_});
  const std::string uri = "data:image/png;base64," + base64(read_bytes(*png_));
  json body = {{"model", "folio-mini-ocr"},
               {"messages",
                {{{"role", "user"},
                  {"content", {{{"type", "text"}, {"text", "Read this page."}}, {{"type", "image_url"}, {"image_url", {{"url", uri}}}}}}}}}};
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["content"], want.markdown);
  EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());

  // Streamed: the deltas add up to the same text.
  body["stream"] = true;
  body["messages"][0]["content"].push_back({{"type", "image_url"}, {"image_url", {{"url", uri}}}});  // two pages now
  const OcrResult want2 = expected({*png_, *png_});
  auto s = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  bool done = false;
  auto events = sse_events(s->body, done);
  EXPECT_TRUE(done);
  std::string text;
  for (const json& e : events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"][0]["delta"].contains("content")) text += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, want2.markdown);
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(events.back()["usage"]["completion_tokens"], want2.tokens.size());
}

TEST_F(OcrHttp, BadInputsAreClearFourHundreds) {
  ServerConfig c = config();
  c.server.max_pages = 2;
  c.inference.max_output_length = 3000;
  auto svc = serve(c);
  auto cli = client(*svc);
  auto post = [&](const json& j) { return cli.Post("/v1/ocr", j.dump(), "application/json"); };
  std::string m;
  m = expect_error(cli.Post("/v1/ocr", "{not json", "application/json"), 400, "invalid_json");
  m = expect_error(post({{"pages", "1"}}), 400, "missing_field");
  m = expect_error(post({{"file", "%%%not base64"}}), 400, "invalid_base64");
  EXPECT_NE(m.find("'file'"), std::string::npos) << m;
  m = expect_error(post({{"file", 12}}), 400, "invalid_type");
  m = expect_error(post({{"file", base64("plain text, not a document")}, {"filename", "notes.txt"}}), 400, "unsupported_file_type");
  EXPECT_NE(m.find("notes.txt"), std::string::npos) << m;
  m = expect_error(post({{"file", base64(read_bytes(*png_))}, {"type", "pdf"}}), 400, "file_type_mismatch");
  m = expect_error(post({{"file", base64(read_bytes(*png_))}, {"type", "gif"}}), 400, "unsupported_file_type");
  m = expect_error(post({{"file", base64("%PDF-1.7\n1 0 obj garbage\n%%EOF")}, {"filename", "broken.pdf"}}), 400, "invalid_document");
  EXPECT_NE(m.find("broken.pdf"), std::string::npos) << m;
  EXPECT_EQ(m.find("folio-upload"), std::string::npos) << "the message shows a temporary path: " << m;
  json three = file_body(*three_pdf_, "three.pdf");
  m = expect_error(post(three), 400, "too_many_pages");
  EXPECT_NE(m.find("server.max_pages"), std::string::npos) << m;
  three["pages"] = "2-3";  // two pages: allowed (checked below with an impossible max_tokens)
  three["max_tokens"] = 3001;
  m = expect_error(post(three), 400, "output_limit_exceeded");
  EXPECT_NE(m.find("inference.max_output_length"), std::string::npos) << m;
  three["max_tokens"] = 0;
  m = expect_error(post(three), 400, "invalid_value");
  three.erase("max_tokens");
  three["pages"] = "4";
  m = expect_error(post(three), 400, "invalid_document");
  EXPECT_NE(m.find("4"), std::string::npos) << m;
  three["pages"] = "1";
  three["model"] = "gpt-4o";
  m = expect_error(post(three), 404, "model_not_found");
  m = expect_error(cli.Post("/v1/ocr", httplib::MultipartFormDataItems{{"pages", "1", "", ""}}), 400, "missing_field");
  // Chat: an image that is not a data URI, or bad base64 in one.
  json chat = {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", {{"url", "http://example.com/a.png"}}}}}}}}}};
  m = expect_error(cli.Post("/v1/chat/completions", chat.dump(), "application/json"), 400, "invalid_image_url");
  chat["messages"][0]["content"][0]["image_url"]["url"] = "data:image/png;base64,@@@";
  m = expect_error(cli.Post("/v1/chat/completions", chat.dump(), "application/json"), 400, "invalid_base64");
  // Nothing was left running or holding KV.
  auto metrics = cli.Get("/metrics");
  EXPECT_EQ(metric(metrics->body, "folio_kv_bytes{tier=\"ram\"}"), 0);
  EXPECT_EQ(metric(metrics->body, "folio_running_sequences"), 0);
}

TEST_F(OcrHttp, TextModelRefusesDocumentsAndImages) {
  ServerConfig c = config();
  c.model.path = (*dir_ / "tiny").string();
  auto svc = serve(c);
  auto cli = client(*svc);
  std::string m = expect_error(cli.Post("/v1/ocr", file_body(*one_pdf_, "a.pdf").dump(), "application/json"), 400, "unsupported_content");
  EXPECT_NE(m.find("text model"), std::string::npos) << m;
  json chat = {{"messages",
                {{{"role", "user"},
                  {"content", {{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + base64(read_bytes(*png_))}}}}}}}}}};
  expect_error(cli.Post("/v1/chat/completions", chat.dump(), "application/json"), 400, "unsupported_content");
}

}  // namespace
}  // namespace folio
