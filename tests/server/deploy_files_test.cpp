// deploy/: the files people run folio with, checked against folio itself. The Kubernetes manifests
// (no cluster here, so no kubectl dry run: their structure is read with yaml-cpp) must name the
// paths folio serves, a config folio loads, a grace period that covers folio's drain and the same
// port everywhere; HAProxy must accept its configuration (haproxy -c) and check /readyz.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "server/server_config.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

const fs::path kDeploy = fs::path(FOLIO_SOURCE_DIR) / "deploy";

YAML::Node container_of(const YAML::Node& deployment) { return deployment["spec"]["template"]["spec"]["containers"][0]; }

TEST(DeployFiles, KubernetesManifestsMatchWhatFolioServes) {
  const YAML::Node cm = YAML::LoadFile((kDeploy / "kubernetes/configmap.yaml").string());
  const YAML::Node dep = YAML::LoadFile((kDeploy / "kubernetes/deployment.yaml").string());
  const YAML::Node svc = YAML::LoadFile((kDeploy / "kubernetes/service.yaml").string());
  const YAML::Node pdb = YAML::LoadFile((kDeploy / "kubernetes/pdb.yaml").string());
  ASSERT_EQ(cm["kind"].as<std::string>(), "ConfigMap");
  ASSERT_EQ(dep["kind"].as<std::string>(), "Deployment");
  ASSERT_EQ(svc["kind"].as<std::string>(), "Service");
  ASSERT_EQ(pdb["kind"].as<std::string>(), "PodDisruptionBudget");

  // The ConfigMap's folio.yaml is a config folio loads.
  const fs::path cfg_file = fs::temp_directory_path() / ("folio_deploy_test_" + std::to_string(getpid()) + ".yaml");
  std::ofstream(cfg_file) << cm["data"]["folio.yaml"].as<std::string>();
  ConfigSources src;
  src.yaml_path = cfg_file.string();
  const ServerConfig cfg = load_server_config(src);
  fs::remove(cfg_file);
  EXPECT_EQ(cfg.server.host, "0.0.0.0") << "reachable from outside the pod";

  // The container runs `serve` with that file, on that port, probing folio's own paths.
  const YAML::Node c = container_of(dep);
  const YAML::Node args = c["args"];
  EXPECT_EQ(args[0].as<std::string>(), "serve");
  const std::string mount = c["volumeMounts"][0]["mountPath"].as<std::string>();
  EXPECT_EQ(args[2].as<std::string>(), mount + "/folio.yaml");
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int64_t>(), cfg.server.port);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), cfg.server.health_path);
  EXPECT_EQ(c["startupProbe"]["httpGet"]["path"].as<std::string>(), cfg.server.health_path);
  // SIGTERM drains for up to request_timeout_s after preStop: the grace period covers both.
  const int64_t grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"].as<int64_t>();
  const auto pre_stop = c["lifecycle"]["preStop"]["exec"]["command"];
  EXPECT_GE(static_cast<double>(grace), cfg.server.request_timeout_s + std::stod(pre_stop[1].as<std::string>()));
  // One selector for the pods, the Service and the budget.
  const YAML::Node labels = dep["spec"]["template"]["metadata"]["labels"];
  for (const YAML::Node& sel : {dep["spec"]["selector"]["matchLabels"], svc["spec"]["selector"], pdb["spec"]["selector"]["matchLabels"]})
    for (const auto& kv : sel) EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"].as<std::string>(), c["ports"][0]["name"].as<std::string>());
  EXPECT_EQ(dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"].as<int>(), 0);
}

TEST(DeployFiles, HaproxyAcceptsItsConfigurationAndChecksReadiness) {
  const fs::path cfg = kDeploy / "haproxy/haproxy.cfg";
  std::ifstream in(cfg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("option httpchk GET /readyz"), std::string::npos);
  EXPECT_NE(text.str().find("balance leastconn"), std::string::npos);
  ASSERT_EQ(std::system("command -v haproxy > /dev/null"), 0) << "haproxy is installed by scripts/install-deps.sh";
  EXPECT_EQ(std::system(("haproxy -c -q -f " + cfg.string()).c_str()), 0);
  // And it refuses a broken one, so the check above can fail.
  const fs::path bad = fs::temp_directory_path() / ("folio_haproxy_bad_" + std::to_string(getpid()) + ".cfg");
  std::ofstream(bad) << text.str() << "\nbackend broken\n    balance no-such-algorithm\n";
  EXPECT_NE(std::system(("haproxy -c -q -f " + bad.string() + " 2> /dev/null").c_str()), 0);
  fs::remove(bad);
}

}  // namespace
}  // namespace folio
