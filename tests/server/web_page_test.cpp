// The page `folio serve` answers at /: its config in place of the placeholder and unable to end its
// <script> element, and over loopback HTTP: open without a key (the API behind it is not), with a
// policy that forbids loading anything from elsewhere. tests/server/browser_page drives it in a
// real browser.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/default_model.h"
#include "server/service.h"
#include "server/web_page.h"
#include "http_test_util.h"

namespace folio {
namespace {

using nlohmann::json;

// The JSON between the config element's tags.
json page_config(const std::string& page) {
  const std::string open = R"(<script id="folio-config" type="application/json">)";
  const size_t at = page.find(open);
  EXPECT_NE(at, std::string::npos);
  const size_t end = page.find("</script>", at);
  return json::parse(page.substr(at + open.size(), end - at - open.size()));
}

TEST(WebPage, ConfigReplacesThePlaceholderAndCannotCloseTheScript) {
  EXPECT_NE(web_page_template().find("{{FOLIO_CONFIG}}"), std::string_view::npos);
  const json config = {{"model", "evil</script><script>alert(1)</script>"}, {"keys", true}, {"reads_documents", true}};
  const std::string page = web_page(config);
  EXPECT_EQ(page.find("{{FOLIO_CONFIG}}"), std::string::npos);
  EXPECT_EQ(page.find("evil</script>"), std::string::npos);
  EXPECT_EQ(page_config(page), config);
}

TEST(WebPage, ServedOpenWhileTheApiNeedsAKey) {
  const std::filesystem::path keys = std::filesystem::temp_directory_path() / ("folio-web-keys-" + std::to_string(::getpid()));
  std::ofstream(keys) << "web-test-key\n";
  ServerConfig c;
  c.server.port = 0;
  c.server.access_log = "off";
  c.server.api_keys_file = keys.string();
  c.inference.threads = 1;
  auto svc = serve_loaded(c);
  httplib::Client cli("127.0.0.1", svc->port());
  auto page = cli.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  const std::string csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self' blob:"), std::string::npos) << csp;
  EXPECT_EQ(page_config(page->body), (json{{"model", "folio-mini-ocr-3"}, {"keys", true}, {"reads_documents", true}}));
  auto api = cli.Get("/v1/models");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 401);
  EXPECT_EQ(cli.Post("/", "x", "text/plain")->status, 405);
  svc->shutdown();
  std::filesystem::remove(keys);
}

}  // namespace
}  // namespace folio
