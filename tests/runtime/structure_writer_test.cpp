// folio-mini-ocr 2's streaming markdown writer against the Python renderer it mirrors
// (tools/train/mini2/structure.py): tests/fixtures/mini2/structure_writer_cases.json holds action
// sequences with their line texts and the markdown render_document makes of them
// (tools/fixtures/make_structure_writer_fixture.py: hand-written cases and 60 random ones).
#include "runtime/structure_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace folio {
namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/structure_writer_cases.json");
  return nlohmann::json::parse(in);
}

std::string write(const nlohmann::json& pages) {
  StructureWriter w;
  std::string out;
  for (size_t p = 0; p < pages.size(); ++p) {
    if (p) out += w.page_break("<page>");
    for (const auto& line : pages[p]) {
      const auto action = structure_action_from_name(line[0].get<std::string>());
      EXPECT_TRUE(action.has_value()) << line[0];
      out += w.push(*action, line[1].get<std::vector<std::string>>());
    }
  }
  return out + w.finish();
}

TEST(StructureWriter, StreamsWhatThePythonRendererWrites) {
  const nlohmann::json cases = load_cases();
  ASSERT_GE(cases.size(), 60u);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(write(cases[i]["pages"]), cases[i]["markdown"].get<std::string>()) << "case " << i;
}

TEST(StructureWriter, TextComesOutAsSoonAsItIsFinal) {
  StructureWriter w;
  EXPECT_EQ(w.push(StructureAction::H1, {"Title"}), "# Title");
  EXPECT_EQ(w.push(StructureAction::Para, {"docu-"}), "\n\ndocu");  // the hyphen waits
  EXPECT_EQ(w.push(StructureAction::Dehyphen, {"ment and well-"}), "ment and well");
  EXPECT_EQ(w.push(StructureAction::JoinTight, {"known"}), "-known");
  EXPECT_EQ(w.push(StructureAction::Row, {"a", "b"}), "\n\n| a | b |");
  EXPECT_EQ(w.finish(), "\n|---|---|");  // a one-row table still gets its separator
}

TEST(StructureWriter, ActionNamesRoundTrip) {
  for (int32_t i = 0; i < kStructureActions; ++i) {
    const auto a = static_cast<StructureAction>(i);
    EXPECT_EQ(structure_action_from_name(structure_action_name(a)), a);
  }
  EXPECT_FALSE(structure_action_from_name("TITLE").has_value());
}

}  // namespace
}  // namespace folio
