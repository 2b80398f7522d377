// folio serve over HTTPS on loopback (server.tls_cert_file / server.tls_key_file): a self-signed
// certificate made here with the openssl command; curl with --cacert gets answers, a plain-HTTP
// request to the TLS port fails cleanly (and the server goes on serving), and bad TLS settings are
// refused at startup naming the key.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "runtime/model_factory.h"
#include "server/service.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

// The command's stdout and exit status.
std::pair<std::string, int> run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return {"", -1};
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  return {out, pclose(p)};
}

class Tls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("folio_tls_test_" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    write_random_checkpoint(preset_config("llama", "tiny"), (*dir_ / "tiny").string(), 21, DType::F32);
    const std::string make_cert = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                                  " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
                                  (*dir_ / "key.pem").string() + " -out " + (*dir_ / "cert.pem").string();
    ASSERT_EQ(run(make_cert).second, 0) << "openssl could not make a certificate";
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static ServerConfig config() {
    ServerConfig c;
    c.model.path = (*dir_ / "tiny").string();
    c.server.port = 0;
    c.inference.threads = 1;
    c.server.tls_cert_file = (*dir_ / "cert.pem").string();
    c.server.tls_key_file = (*dir_ / "key.pem").string();
    return c;
  }
  static fs::path* dir_;
};
fs::path* Tls::dir_ = nullptr;

TEST_F(Tls, CurlWithTheCaGetsAnswersAndPlainHttpFailsCleanly) {
  Service svc(config());
  svc.bind();
  svc.start();
  svc.load();
  const std::string base = "https://127.0.0.1:" + std::to_string(svc.port());
  const std::string cacert = " --cacert " + (*dir_ / "cert.pem").string();
  auto [health, rc] = run("curl -sS --max-time 20 -o /dev/null -w '%{http_code}'" + cacert + " " + base + "/healthz");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(health, "200");
  const std::string body = R"({"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":4,"temperature":0})";
  auto [chat, rc2] = run("curl -sS --max-time 20" + cacert + " -H 'Content-Type: application/json' -d '" + body + "' " + base +
                         "/v1/chat/completions");
  ASSERT_EQ(rc2, 0) << chat;
  const auto j = nlohmann::json::parse(chat);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);

  // Without the CA, curl refuses the self-signed certificate.
  EXPECT_NE(run("curl -sS --max-time 20 -o /dev/null " + base + "/healthz").second, 0);
  // Plain HTTP to the TLS port: the handshake fails, the client gets an error, not a hang.
  httplib::Client plain("127.0.0.1", svc.port());
  plain.set_read_timeout(10, 0);
  plain.set_connection_timeout(10, 0);
  const auto r = plain.Get("/healthz");
  EXPECT_TRUE(!r || r->status >= 400) << (r ? r->status : 0);
  // ... and HTTPS still works after it.
  EXPECT_EQ(run("curl -sS --max-time 20 -o /dev/null -w '%{http_code}'" + cacert + " " + base + "/healthz").first, "200");
  svc.shutdown();
  svc.wait();
}

TEST_F(Tls, BadSettingsAreRefusedNamingTheKey) {
  auto message = [](ServerConfig c) {
    try {
      Service s(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  ServerConfig c = config();
  c.server.tls_key_file = "";
  EXPECT_NE(message(c).find("TLS needs both, got only server.tls_cert_file"), std::string::npos) << message(c);
  c = config();
  c.server.tls_cert_file = (*dir_ / "missing.pem").string();
  EXPECT_NE(message(c).find("server.tls_cert_file: cannot read"), std::string::npos) << message(c);
  c = config();
  c.server.tls_cert_file = c.server.tls_key_file;  // a key where the certificate should be
  EXPECT_NE(message(c).find("OpenSSL cannot use"), std::string::npos) << message(c);
}

}  // namespace
}  // namespace folio
