// The transport under the clients that took the thread-per-connection server down: a thousand
// connections dripping headers, idle ones, too many from one address, and clients that leave while
// a non-streamed answer is being generated; and the HTTP details clients rely on (100-continue,
// HEAD, pipelined requests). Real sockets on loopback, against an in-process Service.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runtime/model_factory.h"
#include "server/service.h"
#include "http_test_util.h"
#include "test_base64.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

fs::path g_dir;


int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& s) { return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()); }

// Reads until `until` appears, the peer closes, or `limit` passes; returns what was read.
std::string read_some(int fd, std::chrono::milliseconds limit, const std::string& until = "", bool* closed = nullptr) {
  std::string got;
  const auto end = Clock::now() + limit;
  if (closed) *closed = false;
  while (Clock::now() < end && (until.empty() || got.find(until) == std::string::npos)) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

class HttpTransport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = fs::temp_directory_path() / ("folio_http_transport_test_" + std::to_string(getpid()));
    write_random_checkpoint(preset_config("llama", "tiny"), (g_dir / "tiny").string(), 21, DType::F32);
    // A long answer is still running when cut off.
    const ModelConfig slow = slow_llama_config();
    write_random_checkpoint(slow, (g_dir / "slow").string(), 22, DType::F32);
    // An Unlimited-OCR-shaped model with random weights, big enough that a page takes seconds to
    // write (it never writes a page separator): an OCR stream can be cut in the middle of a page.
    ModelConfig ocr = preset_config("unlimited-ocr", "tiny");
    ocr.hidden = 384;
    ocr.n_heads = ocr.n_kv_heads = 8;
    ocr.head_dim = 48;
    ocr.n_layers = 8;
    ocr.intermediate = 1024;
    ocr.moe_intermediate = 256;
    std::optional<VisionConfig> vision = preset_vision_config("unlimited-ocr", "tiny");
    vision->n_embed = ocr.hidden;
    write_random_checkpoint(ocr, vision, (g_dir / "slow-ocr").string(), 23, DType::F32);
    // A thousand client sockets live in this process beside the server's.
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  static void TearDownTestSuite() { fs::remove_all(g_dir); }

  static ServerConfig config(const std::string& model = "tiny") {
    ServerConfig c;
    c.model.path = (g_dir / model).string();
    c.server.port = 0;
    c.server.access_log = "off";
    c.inference.kv_dtype = "f32";
    c.inference.threads = 1;
    return c;
  }
  static std::unique_ptr<Service> serve(const ServerConfig& c) { return serve_loaded(c); }
  static std::string metrics(const Service& s) {
    httplib::Client c("127.0.0.1", s.port());
    auto r = c.Get("/metrics");
    return r ? r->body : std::string();
  }
  // Polls /metrics until `series` equals `value` or 5 s pass; returns the last value.
  static double wait_metric(const Service& s, const std::string& series, double value) {
    double v = -1;
    for (int i = 0; i < 500 && v != value; ++i) {
      v = metric(metrics(s), series);
      if (v != value) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return v;
  }
  static std::string chat(const std::string& model, int max_tokens) {
    return json{{"model", model}, {"messages", {{{"role", "user"}, {"content", "tell a story"}}}}, {"max_tokens", max_tokens},
                {"temperature", 0}, {"ignore_eos", true}}
        .dump();
  }
};

TEST_F(HttpTransport, AThousandDrippingConnectionsLeaveProbesAndChatAnswerable) {
  ServerConfig c = config();
  c.server.header_timeout_s = 60;  // they stay for the whole test
  auto svc = serve(c);
  const size_t threads_before = thread_count();
  const size_t rss_before = rss_bytes();
  std::vector<int> drips;
  for (int i = 0; i < 1000; ++i) {
    const int fd = connect_to(svc->port());
    ASSERT_GE(fd, 0) << "connection " << i;
    ASSERT_TRUE(send_all(fd, "POST /v1/chat/completions HTTP/1.1\r\n"));
    drips.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    while (!stop) {
      for (int fd : drips) send_all(fd, "X-Drip: 1\r\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  EXPECT_EQ(wait_metric(*svc, "folio_http_connections", 1001), 1001);  // the drips and this probe

  {
  httplib::Client probe("127.0.0.1", svc->port());
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Clock::now();
    auto r = probe.Get("/healthz");
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[197], 100.0) << "p99 of /healthz under 1,000 dripping connections";
  auto r = probe.Post("/v1/chat/completions", chat("tiny", 8), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // No thread per connection, and a few kilobytes each.
  EXPECT_LE(thread_count(), threads_before + 1) << "the dripper only";
  EXPECT_LT(rss_bytes(), rss_before + (size_t{64} << 20));
  }

  stop = true;
  dripper.join();
  for (int fd : drips) close(fd);
  EXPECT_EQ(wait_metric(*svc, "folio_http_connections", 1), 1);
}

TEST_F(HttpTransport, DeadlinesCloseDrippingAndIdleConnections) {
  ServerConfig c = config();
  c.server.header_timeout_s = 0.3;
  c.server.idle_timeout_s = 0.3;
  auto svc = serve(c);
  const int drip = connect_to(svc->port());
  const int idle = connect_to(svc->port());
  ASSERT_TRUE(send_all(drip, "GET /healthz HTTP/1.1\r\n"));
  const auto t0 = Clock::now();
  bool closed = false;
  std::string got;
  while (!closed && Clock::now() - t0 < std::chrono::seconds(3)) {
    send_all(drip, "X-Drip: 1\r\n");
    got += read_some(drip, std::chrono::milliseconds(100), "", &closed);
  }
  EXPECT_TRUE(closed) << "a client dripping its headers is closed at the header deadline";
  EXPECT_EQ(got, "") << "with no answer";
  read_some(idle, std::chrono::seconds(3), "", &closed);
  EXPECT_TRUE(closed) << "an idle connection is closed at the idle deadline";
  close(drip);
  close(idle);
  // Meanwhile a prompt client is served as usual.
  httplib::Client cli("127.0.0.1", svc->port());
  EXPECT_EQ(cli.Get("/healthz")->status, 200);
}

TEST_F(HttpTransport, ConnectionsOverTheCapGet503AndTheRestAreServed) {
  ServerConfig c = config();
  c.server.max_connections_per_client = 2;
  auto svc = serve(c);
  const int a = connect_to(svc->port());
  const int b = connect_to(svc->port());
  const int over = connect_to(svc->port());
  bool closed = false;
  const std::string got = read_some(over, std::chrono::seconds(3), "", &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("\"too_many_connections\""), std::string::npos) << got;
  EXPECT_TRUE(closed);
  close(over);
  ASSERT_TRUE(send_all(a, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(read_some(a, std::chrono::seconds(3), "\"ok\"").find("200 OK"), std::string::npos);
  close(b);
  // b's place is free again (the server sees its close at its next read).
  std::string answer;
  for (int i = 0; i < 100; ++i) {
    const int fd = connect_to(svc->port());
    send_all(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    answer = read_some(fd, std::chrono::seconds(3));
    close(fd);
    if (answer.find("200 OK") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_GE(metric(answer, "folio_http_connections_refused_total"), 1) << answer;
  close(a);
}

TEST_F(HttpTransport, NonStreamingClientThatLeavesIsCancelledAndItsKVFreed) {
  auto svc = serve(config("slow"));
  const int fd = connect_to(svc->port());
  const std::string body = chat("slow", 3000);
  ASSERT_TRUE(send_all(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body));
  ASSERT_EQ(wait_metric(*svc, "folio_running_sequences", 1), 1);
  double kv = 0;
  for (int i = 0; i < 500 && kv <= 0; ++i) {
    kv = metric(metrics(*svc), "folio_kv_bytes{tier=\"ram\"}");
    if (kv <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(kv, 0) << "generating";
  close(fd);
  EXPECT_EQ(wait_metric(*svc, "folio_kv_bytes{tier=\"ram\"}", 0), 0);
  const std::string text = metrics(*svc);
  EXPECT_EQ(metric(text, "folio_running_sequences"), 0);
  EXPECT_EQ(metric(text, "folio_client_disconnects_total"), 1);
  EXPECT_EQ(wait_metric(*svc, "folio_generations_total{reason=\"cancelled\"}", 1), 1);
  EXPECT_LT(metric(metrics(*svc), "folio_generation_tokens_total"), 3000);
}

// A 21-page document (the page 21 times: two passes, decoded side by side) streamed, and cut while
// its first pages are being written.
TEST_F(HttpTransport, OcrStreamCutMidPageIsCancelledAndItsKVFreed) {
  auto svc = serve(config("slow-ocr"));
  std::ifstream png(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/layout_page.png", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(png)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  json files = json::array();
  for (int i = 0; i < 21; ++i) files.push_back({{"file", test_base64(bytes)}, {"filename", "page" + std::to_string(i + 1) + ".png"}});
  const std::string body = json{{"files", files}, {"stream", true}, {"max_tokens", 3000}}.dump();
  const int fd = connect_to(svc->port());
  ASSERT_TRUE(send_all(fd, "POST /v1/ocr HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body));
  double running = 0;
  for (int i = 0; i < 1000 && running < 2; ++i) {
    running = metric(metrics(*svc), "folio_running_sequences");
    if (running < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(running, 2) << "both passes decoding";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well into the first pages
  const std::string before = read_some(fd, std::chrono::milliseconds(10));
  EXPECT_EQ(before.find("ocr.page"), std::string::npos) << "no page is final yet";
  close(fd);
  EXPECT_EQ(wait_metric(*svc, "folio_kv_bytes{tier=\"ram\"}", 0), 0);
  EXPECT_EQ(wait_metric(*svc, "folio_running_sequences", 0), 0);
  EXPECT_EQ(wait_metric(*svc, "folio_client_disconnects_total", 1), 1);
  EXPECT_EQ(wait_metric(*svc, "folio_generations_total{reason=\"cancelled\"}", 2), 2);
  EXPECT_LT(metric(metrics(*svc), "folio_generation_tokens_total"), 2 * 3000);
}

TEST_F(HttpTransport, ContinueHeadAndPipelinedRequests) {
  auto svc = serve(config());
  // Expect: 100-continue: the body is sent only after the interim answer.
  const int fd = connect_to(svc->port());
  const std::string body = R"({"content": "hello"})";
  ASSERT_TRUE(send_all(fd, "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(read_some(fd, std::chrono::seconds(3), "\r\n\r\n").rfind("HTTP/1.1 100 Continue", 0), 0u);
  ASSERT_TRUE(send_all(fd, body));
  std::string got = read_some(fd, std::chrono::seconds(3), "]}");
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("\"tokens\""), std::string::npos) << got;
  // HEAD: GET's status and length, no body.
  ASSERT_TRUE(send_all(fd, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  got = read_some(fd, std::chrono::milliseconds(500));
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
  EXPECT_NE(got.find("Content-Length: 15"), std::string::npos) << got;
  EXPECT_EQ(got.find("{"), std::string::npos) << got;
  // Two requests in one write: two answers, in order.
  ASSERT_TRUE(send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
  got = read_some(fd, std::chrono::seconds(3), "\"list\"");
  const size_t first = got.find("\"status\":\"ok\""), second = got.find("\"object\":\"list\"");
  EXPECT_NE(first, std::string::npos) << got;
  EXPECT_NE(second, std::string::npos) << got;
  EXPECT_LT(first, second);
  // A request line that is not HTTP: 400 in JSON, then the connection closes.
  ASSERT_TRUE(send_all(fd, "NOT HTTP AT ALL\r\n\r\n"));
  bool closed = false;
  got = read_some(fd, std::chrono::seconds(3), "", &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_NE(got.find("\"malformed_request\""), std::string::npos) << got;
  EXPECT_TRUE(closed);
  close(fd);
}

}  // namespace
}  // namespace folio
