// `folio serve` as a process: bad configuration exits 2 with the key named, and SIGTERM drains and
// exits 0.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "runtime/model_factory.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code;
  std::string out;
};

// Runs the binary with `args`, under the environment assignments `env` ("NAME=value ...").
Outcome folio(const std::string& args, const std::string& env = "") {
  FILE* p = popen((env + " " + std::string(FOLIO_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("folio_serve_cli_" + std::to_string(getpid()));
    write_random_checkpoint(preset_config("llama", "tiny"), (dir_ / "tiny").string(), 3, DType::F32);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string model() { return (dir_ / "tiny").string(); }
  static fs::path dir_;
};
fs::path ServeCli::dir_;

TEST_F(ServeCli, InvalidConfigExits2NamingTheKey) {
  Outcome r = folio("serve --model.path " + model() + " --server.port 99999");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("server.port must be between 0 and 65535"), std::string::npos) << r.out;

  r = folio("serve --model.path " + model() + " --inference.batch_size many");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--inference.batch_size"), std::string::npos) << r.out;

  fs::path yaml = dir_ / "bad.yaml";
  std::ofstream(yaml) << "server:\n  port: 8080\ninference:\n  batchsize: 4\n";
  r = folio("serve --config " + yaml.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown key 'inference.batchsize'"), std::string::npos) << r.out;

  r = folio("serve --model.path " + model() + " --server.portt 1");
  EXPECT_EQ(r.code, 2) << r.out;  // CLI11 refuses unknown flags

  r = folio("serve --model.path " + (dir_ / "nope").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.path: " + (dir_ / "nope").string() + " does not exist"), std::string::npos) << r.out;

  r = folio("serve --model.path " + model() + " --attention.type rolling");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("attention.type: rolling needs an OCR model that reads its pages separately"), std::string::npos) << r.out;

  r = folio("serve --model.path " + model() + " --inference.kv_dtype q5");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("inference.kv_dtype"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("must be one of f32, f16, bf16, q8, q4, got 'q5'"), std::string::npos) << r.out;

  r = folio("serve --model.path " + model() + " --server.api_keys_file " + (dir_ / "nokeys").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("server.api_keys_file"), std::string::npos) << r.out;
}

TEST_F(ServeCli, EnvironmentIsReadAndFlagsWin) {
  Outcome r = folio("serve --model.path " + model(), "FOLIO_SERVER_PORT=abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("environment variable FOLIO_SERVER_PORT: server.port must be an integer, got 'abc'"), std::string::npos) << r.out;
  // --model is model.path, --mmproj model.mmproj (folio ocr's spellings).
  r = folio("serve --model " + (dir_ / "nope").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.path: " + (dir_ / "nope").string() + " does not exist"), std::string::npos) << r.out;
  r = folio("serve --help");
  EXPECT_NE(r.out.find("--model.path,--model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--model.mmproj,--mmproj"), std::string::npos) << r.out;
  r = folio("serve", "FOLIO_MODEL_PATH=" + (dir_ / "from-env").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.path: " + (dir_ / "from-env").string() + " does not exist"), std::string::npos) << r.out;
  // The flag overrides the broken variable: the config is valid, so the error left is the model's.
  r = folio("serve --server.port 0 --model.path " + (dir_ / "nope").string(), "FOLIO_SERVER_PORT=abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.find("FOLIO_SERVER_PORT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.path"), std::string::npos) << r.out;
}

TEST_F(ServeCli, ServesThenDrainsOnSigterm) {
  int err[2];
  ASSERT_EQ(pipe(err), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(err[1], 2);
    close(err[0]);
    // --model: folio ocr's spelling of --model.path (the second server below spells it out).
    execl(FOLIO_BINARY, FOLIO_BINARY, "serve", "--model", model().c_str(), "--server.port", "0", "--inference.threads", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(err[1]);
  // Whatever fails below, the server does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (kill(pid, 0) == 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  // Read stderr until the "serving ... on http://host:port" line.
  std::string log;
  std::smatch m;
  const std::regex serving("serving tiny on http://127\\.0\\.0\\.1:([0-9]+)");
  char buf[1024];
  while (!std::regex_search(log, m, serving)) {
    ssize_t n = read(err[0], buf, sizeof buf);
    if (n <= 0) break;
    log.append(buf, static_cast<size_t>(n));
  }
  ASSERT_TRUE(std::regex_search(log, m, serving)) << log;
  const int port = std::stoi(m[1]);
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(30, 0);
  auto h = cli.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(cli.Get("/readyz")->status, 200);
  nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}};
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // A second server cannot take the same port: exit 2 naming it.
  Outcome busy = folio("serve --model.path " + model() + " --server.port " + std::to_string(port), "timeout 30");
  EXPECT_EQ(busy.code, 2) << busy.out;
  EXPECT_NE(busy.out.find("server.host / server.port: cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << busy.out;

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  while (true) {
    ssize_t n = read(err[0], buf, sizeof buf);
    if (n <= 0) break;
    log.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 0) << log;
  EXPECT_NE(log.find("SIGTERM received"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
}

}  // namespace
}  // namespace folio
