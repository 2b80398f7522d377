// reads_as_prose against its Python twin (tools/train/mini3/prose_line.py): every line of
// tests/fixtures/mini3/prose_lines.json (prose from the repository's documents, code from its
// sources, and lines of the kinds man pages hold) gets the answer the Python side gave.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/prose_line.h"

namespace folio {
namespace {

TEST(ProseLine, AgreesWithThePythonTwinOnEveryFixtureLine) {
  std::ifstream f(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini3/prose_lines.json");
  ASSERT_TRUE(f) << "fixture missing (tools/fixtures/make_prose_lines_fixture.py)";
  const nlohmann::json j = nlohmann::json::parse(f);
  int prose = 0, code = 0, options = 0;
  for (const nlohmann::json& c : j["cases"]) {
    const std::string line = c["line"];
    const bool want = c["prose"], option = c["option_term"];
    EXPECT_EQ(reads_as_prose(line), want) << "'" << line << "'";
    EXPECT_EQ(is_option_term(line), option) << "'" << line << "'";
    (want ? prose : code)++;
    options += option;
  }
  EXPECT_GT(prose, 50);
  EXPECT_GT(code, 200);
  EXPECT_GT(options, 10);
}

TEST(ProseLine, ManPageDescriptionsAreProseTheirCommandsAndCodeAreNot) {
  EXPECT_TRUE(reads_as_prose("Sort entries alphabetically if none of -cftuvSUX nor --sort is specified."));
  EXPECT_TRUE(reads_as_prose("See chown(2) and fchownat(2) for the details of the calls."));
  EXPECT_FALSE(reads_as_prose("-d, --date=STRING"));
  EXPECT_FALSE(reads_as_prose("for k, v in TAGS_V2.items():"));
  EXPECT_FALSE(reads_as_prose("llvm_unreachable(\"Loop not in the loop nest\");"));
  EXPECT_FALSE(reads_as_prose("# Set the path to the directory of the data"));
}

TEST(ProseLine, OptionTermsAreNotCodeTheLinesThatStartLikeThemMayBe) {
  EXPECT_TRUE(is_option_term("-d, --date=STRING"));
  EXPECT_TRUE(is_option_term("-c cols | -cols cols"));
  EXPECT_TRUE(is_option_term("--show-current-patch[=(diff|raw)]"));
  EXPECT_FALSE(is_option_term("-rw-r--r-- 1 root root 75026 Dec 5 tar.pdf"));
  EXPECT_FALSE(is_option_term("-x = y + 1;"));
  EXPECT_FALSE(is_option_term("- name: foo"));
  EXPECT_FALSE(is_option_term("--"));
  EXPECT_FALSE(is_option_term("Sort entries alphabetically if none of -cftuvSUX nor --sort is specified."));
}

}  // namespace
}  // namespace folio
