// ServerConfig: defaults, YAML, environment and flags, their precedence, and a clear error naming the
// key for every kind of invalid value.
#include "server/server_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("folio_config_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string yaml(const std::string& text) {
    fs::path p = dir_ / "folio.yaml";
    std::ofstream(p) << text;
    return p.string();
  }
  // The message of the InvalidInput error that loading `src` throws ("" if none).
  static std::string error_of(const ConfigSources& src) {
    try {
      load_server_config(src);
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ServerConfigTest, DefaultsMatchTheIssue) {
  ServerConfig c = load_server_config({});
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.server.port, 8080);
  EXPECT_EQ(c.server.health_path, "/healthz");
  EXPECT_EQ(c.attention.type, "reference_sliding_window");
  EXPECT_EQ(c.attention.decode_window_size, 128);
  EXPECT_TRUE(c.attention.causal);
  EXPECT_EQ(c.model.path, "");
  EXPECT_EQ(c.server.api_keys_file, "");
  EXPECT_EQ(c.server.rate_limit, 0.0);
  EXPECT_EQ(c.server.auth_failures_per_minute, 10.0);
}

TEST_F(ServerConfigTest, EveryKeyHasAnEnvVarAndHelp) {
  EXPECT_EQ(config_env_var("server.port"), "FOLIO_SERVER_PORT");
  EXPECT_EQ(config_env_var("inference.kv_budget_bytes"), "FOLIO_INFERENCE_KV_BUDGET_BYTES");
  for (const char* k : {"model.path", "model.max_reference_length", "attention.type", "attention.decode_window_size",
                        "attention.causal", "inference.max_output_length", "inference.batch_size", "inference.dtype",
                        "inference.kv_dtype", "inference.kv_budget_bytes", "server.host", "server.port",
                        "server.health_path", "server.api_keys_file", "server.rate_limit", "server.max_body_bytes",
                        "server.request_timeout_s"}) {
    EXPECT_NE(std::find(server_config_keys().begin(), server_config_keys().end(), k), server_config_keys().end()) << k;
    EXPECT_FALSE(server_config_help(k).empty()) << k;
  }
}

TEST_F(ServerConfigTest, YamlSetsEveryType) {
  ServerConfig c = load_server_config({yaml("model:\n  path: /m\n  max_reference_length: 900\n"
                                            "attention:\n  type: full\n  decode_window_size: 64\n  causal: true\n"
                                            "inference:\n  batch_size: 4\n  kv_budget_bytes: 12345678901\n  kv_dtype: f32\n"
                                            "server:\n  port: 9001\n  rate_limit: 2.5\n  request_timeout_s: 1.5\n"),
                                       {},
                                       {}});
  EXPECT_EQ(c.model.path, "/m");
  EXPECT_EQ(c.model.max_reference_length, 900);
  EXPECT_EQ(c.attention.type, "full");
  EXPECT_EQ(c.attention.decode_window_size, 64);
  EXPECT_EQ(c.inference.batch_size, 4);
  EXPECT_EQ(c.inference.kv_budget_bytes, 12345678901ull);
  EXPECT_EQ(c.inference.kv_dtype, "f32");
  EXPECT_EQ(c.server.port, 9001);
  EXPECT_DOUBLE_EQ(c.server.rate_limit, 2.5);
  EXPECT_DOUBLE_EQ(c.server.request_timeout_s, 1.5);
  EXPECT_EQ(c.server.host, "127.0.0.1");  // untouched keys keep their defaults
}

TEST_F(ServerConfigTest, WeightsSchemeIsCheckedAgainstTheSchemes) {
  EXPECT_EQ(load_server_config({yaml("model:\n  weights: q4_k_m\n"), {}, {}}).model.weights, "q4_k_m");
  EXPECT_EQ(load_server_config({"", {{"FOLIO_MODEL_WEIGHTS", "q8_0"}}, {}}).model.weights, "q8_0");
  EXPECT_EQ(load_server_config({"", {}, {}}).model.weights, "");
  const std::string m = error_of({"", {}, {{"model.weights", "q3_k"}}});
  EXPECT_NE(m.find("model.weights"), std::string::npos) << m;
  EXPECT_NE(m.find("got 'q3_k'"), std::string::npos) << m;
  EXPECT_NE(m.find("q4_k_m"), std::string::npos) << m;
}

TEST_F(ServerConfigTest, FlagBeatsEnvBeatsYamlBeatsDefault) {
  std::string y = yaml("server:\n  port: 1111\n  host: 0.0.0.0\ninference:\n  batch_size: 3\n");
  // YAML over default.
  EXPECT_EQ(load_server_config({y, {}, {}}).server.port, 1111);
  // Env over YAML; other YAML keys stay.
  ConfigSources s{y, {{"FOLIO_SERVER_PORT", "2222"}}, {}};
  ServerConfig c = load_server_config(s);
  EXPECT_EQ(c.server.port, 2222);
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.inference.batch_size, 3);
  // Flag over env.
  s.flags["server.port"] = "3333";
  EXPECT_EQ(load_server_config(s).server.port, 3333);
  // Env alone over default.
  EXPECT_EQ(load_server_config({"", {{"FOLIO_INFERENCE_BATCH_SIZE", "5"}}, {}}).inference.batch_size, 5);
}

TEST_F(ServerConfigTest, ModelMmapIsABoolean) {
  EXPECT_FALSE(load_server_config({"", {}, {}}).model.mmap);
  EXPECT_TRUE(load_server_config({yaml("model:\n  mmap: true\n"), {}, {}}).model.mmap);
  EXPECT_TRUE(load_server_config({"", {{"FOLIO_MODEL_MMAP", "true"}}, {}}).model.mmap);
  const std::string m = error_of({"", {}, {{"model.mmap", "sometimes"}}});
  EXPECT_NE(m.find("model.mmap"), std::string::npos) << m;
}

TEST_F(ServerConfigTest, UnknownYamlKeyIsNamed) {
  std::string m = error_of({yaml("server:\n  prot: 8080\n"), {}, {}});
  EXPECT_NE(m.find("unknown key 'server.prot'"), std::string::npos) << m;
  m = error_of({yaml("serverz:\n  port: 8080\n"), {}, {}});
  EXPECT_NE(m.find("unknown key 'serverz'"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.nope", "1"}}});
  EXPECT_NE(m.find("--server.nope"), std::string::npos) << m;
}

TEST_F(ServerConfigTest, WrongTypeIsNamedWithItsSource) {
  std::string m = error_of({yaml("server:\n  port: eighty\n"), {}, {}});
  EXPECT_NE(m.find("server.port must be an integer, got 'eighty'"), std::string::npos) << m;
  EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  m = error_of({yaml("attention:\n  causal: maybe\n"), {}, {}});
  EXPECT_NE(m.find("attention.causal must be true or false"), std::string::npos) << m;
  m = error_of({yaml("server:\n  host: [a, b]\n"), {}, {}});
  EXPECT_NE(m.find("server.host"), std::string::npos) << m;
  m = error_of({"", {{"FOLIO_SERVER_PORT", "80x"}}, {}});
  EXPECT_NE(m.find("environment variable FOLIO_SERVER_PORT"), std::string::npos) << m;
  EXPECT_NE(m.find("server.port must be an integer"), std::string::npos) << m;
  m = error_of({"", {}, {{"inference.kv_budget_bytes", "-5"}}});
  EXPECT_NE(m.find("option --inference.kv_budget_bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("non-negative integer"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.rate_limit", "fast"}}});
  EXPECT_NE(m.find("server.rate_limit must be a number"), std::string::npos) << m;
}

TEST_F(ServerConfigTest, OutOfRangeIsNamed) {
  std::string m = error_of({"", {}, {{"server.port", "70000"}}});
  EXPECT_NE(m.find("server.port must be between 0 and 65535, got 70000"), std::string::npos) << m;
  m = error_of({"", {}, {{"inference.batch_size", "0"}}});
  EXPECT_NE(m.find("inference.batch_size must be between 1"), std::string::npos) << m;
  m = error_of({"", {}, {{"attention.decode_window_size", "0"}}});
  EXPECT_NE(m.find("attention.decode_window_size"), std::string::npos) << m;
  m = error_of({"", {}, {{"attention.kv_keep", "0"}}});
  EXPECT_NE(m.find("attention.kv_keep must be in (0, 1]"), std::string::npos) << m;
  m = error_of({"", {}, {{"attention.type", "sliding"}}});
  EXPECT_NE(m.find("attention.type must be one of reference_sliding_window, full, sparse, rolling"), std::string::npos) << m;
  m = error_of({"", {}, {{"inference.kv_dtype", "q8_0"}}});
  EXPECT_NE(m.find("inference.kv_dtype"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.request_timeout_s", "0"}}});
  EXPECT_NE(m.find("server.request_timeout_s must be a finite number > 0"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.health_path", "health"}}});
  EXPECT_NE(m.find("server.health_path must be a path"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.health_path", "/metrics"}}});
  EXPECT_NE(m.find("server.health_path must not collide"), std::string::npos) << m;
  m = error_of({"", {}, {{"model.served_names", "a,,b"}}});
  EXPECT_NE(m.find("model.served_names has an empty name"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.log_format", "xml"}}});
  EXPECT_NE(m.find("server.log_format must be one of json, text"), std::string::npos) << m;
  m = error_of({"", {}, {{"server.log_level", "debug"}}});
  EXPECT_NE(m.find("server.log_level must be one of info, warn, error, off"), std::string::npos) << m;
  m = error_of({"", {}, {{"model.encoder_precision", "fp16"}}});
  EXPECT_NE(m.find("model.encoder_precision must be auto, f32 or bf16, got 'fp16'"), std::string::npos) << m;
  m = error_of({"", {}, {{"model.prefill_precision", "int8"}}});
  EXPECT_NE(m.find("model.prefill_precision must be auto, f32 or bf16, got 'int8'"), std::string::npos) << m;
}

TEST_F(ServerConfigTest, BadYamlFileIsAClearError) {
  std::string m = error_of({yaml("server:\n  port: [1,\n"), {}, {}});
  EXPECT_NE(m.find("YAML syntax error"), std::string::npos) << m;
  m = error_of({yaml("- a\n- b\n"), {}, {}});
  EXPECT_NE(m.find("top level must be a mapping"), std::string::npos) << m;
  try {
    load_server_config({(dir_ / "missing.yaml").string(), {}, {}});
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("missing.yaml"), std::string::npos) << e.what();
  }
  // An empty file is all defaults.
  EXPECT_EQ(load_server_config({yaml(""), {}, {}}).server.port, 8080);
}

}  // namespace
}  // namespace folio
