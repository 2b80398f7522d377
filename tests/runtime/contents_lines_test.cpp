// contents_entries against its Python twin (tools/train/mini4/contents_lines.py) on the fixture pages
// of tests/fixtures/mini4/contents_lines.json (tools/fixtures/make_contents_lines_fixture.py), and
// the items StructureWriter writes for them.
#include "runtime/contents_lines.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/structure_writer.h"

namespace folio {
namespace {

std::vector<ReadLine> lines_of(const nlohmann::json& page) {
  std::vector<ReadLine> out;
  for (const nlohmann::json& l : page["lines"]) {
    ReadLine r;
    r.x0 = l["x0"], r.region_x0 = l["region_x0"], r.x_height = l["x_height"], r.led = l["led"];
    for (size_t k = 0; k < l["cells"].size(); ++k)
      r.segments.push_back({l["spans"][k][0].get<int>(), l["spans"][k][1].get<int>(), l["cells"][k].get<std::string>(), 0.0});
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json fixture() {
  std::ifstream f(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini4/contents_lines.json");
  EXPECT_TRUE(f) << "fixture missing (tools/fixtures/make_contents_lines_fixture.py)";
  return f ? nlohmann::json::parse(f) : nlohmann::json::object();
}

TEST(ContentsLines, AgreeWithThePythonTwinOnEveryFixturePage) {
  const nlohmann::json j = fixture();
  int entries = 0, starts = 0, continuations = 0, pages_without = 0;
  for (const nlohmann::json& page : j["pages"]) {
    const std::vector<std::optional<ContentsEntry>> got = contents_entries(lines_of(page));
    ASSERT_EQ(got.size(), page["entries"].size());
    bool any = false;
    for (size_t i = 0; i < got.size(); ++i) {
      const nlohmann::json& want = page["entries"][i];
      ASSERT_EQ(got[i].has_value(), !want.is_null()) << "line " << i << ": " << page["lines"][i]["cells"].dump();
      if (!got[i]) continue;
      any = true;
      const std::string part = got[i]->part == ContentsPart::Entry ? "entry" : got[i]->part == ContentsPart::Start ? "start" : "continuation";
      EXPECT_EQ(part, want["part"].get<std::string>()) << i;
      EXPECT_EQ(got[i]->level, want["level"].get<int>()) << i;
      EXPECT_EQ(got[i]->title, want["title"].get<std::string>()) << i;
      EXPECT_EQ(got[i]->page, want["page"].get<std::string>()) << i;
      if (got[i]->part == ContentsPart::Entry) {
        EXPECT_EQ(std::string(size_t(2 * got[i]->level), ' ') + "- " + contents_text(*got[i]), page["items"][i].get<std::string>());
      }
      got[i]->part == ContentsPart::Entry ? ++entries : got[i]->part == ContentsPart::Start ? ++starts : ++continuations;
    }
    pages_without += !any;
  }
  EXPECT_GE(entries, 20);
  EXPECT_GE(starts, 1);
  EXPECT_GE(continuations, 2);
  EXPECT_GE(pages_without, 2) << "the fixture must hold pages that are no contents pages";
}

TEST(ContentsLines, WritesAgreeWithThePythonTwinOnEveryFixturePage) {
  const nlohmann::json j = fixture();
  int planned = 0, paragraphs = 0, after_own = 0;
  for (const nlohmann::json& page : j["pages"]) {
    const auto got = contents_writes(lines_of(page));
    ASSERT_EQ(got.size(), page["writes"].size());
    for (size_t i = 0; i < got.size(); ++i) {
      const nlohmann::json& want = page["writes"][i];
      ASSERT_EQ(got[i].has_value(), !want.is_null()) << "line " << i << ": " << page["lines"][i]["cells"].dump();
      if (!got[i]) continue;
      ++planned;
      ASSERT_EQ(got[i]->size(), want.size()) << "line " << i;
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ((*got[i])[k].item, want[k][0].get<bool>()) << i;
        EXPECT_EQ((*got[i])[k].level, want[k][1].get<int>()) << i;
        EXPECT_EQ((*got[i])[k].text, want[k][2].get<std::string>()) << i;
        paragraphs += !(*got[i])[k].item;
      }
      after_own += got[i]->size() > 1;
    }
  }
  EXPECT_GE(planned, 50);
  EXPECT_GE(paragraphs, 2) << "a two-column index's title and letter heading";
  EXPECT_GE(after_own, 1) << "the right column written after the left";
}

ReadLine entry_line(std::vector<std::string> cells, int x0, bool led) {
  ReadLine r;
  r.x0 = x0, r.x_height = 10, r.led = led;
  for (std::string& c : cells) r.segments.push_back({0, 0, std::move(c), 0.0});
  return r;
}

TEST(ContentsLines, ATableOfNamesAndNumbersIsNoContentsPage) {
  std::vector<ReadLine> lines;
  for (const char* m : {"January", "February", "March", "April", "May"}) lines.push_back(entry_line({m, "12"}, 40, false));
  for (const auto& e : contents_entries(lines)) EXPECT_FALSE(e.has_value());
  lines[0].led = lines[1].led = true;  // two leaders make it one
  for (const auto& e : contents_entries(lines)) EXPECT_TRUE(e.has_value());
}

TEST(ContentsLines, NestedItemsFollowTheIndentsAndStayOneList) {
  std::vector<ReadLine> lines = {entry_line({"1", "Introduction", "1"}, 100, false),
                                 entry_line({"1.1", "Scope", "2"}, 130, true),
                                 entry_line({"1.1.1", "Limits", "3"}, 160, true),
                                 entry_line({"2", "Usage", "5"}, 101, false)};
  const auto entries = contents_entries(lines);
  StructureWriter w;
  std::string md;
  for (const auto& e : entries) md += w.push(StructureAction::Bullet, {contents_text(*e)}, e->level);
  md += w.finish();
  EXPECT_EQ(md, "- 1 Introduction \u2014 1\n  - 1.1 Scope \u2014 2\n    - 1.1.1 Limits \u2014 3\n- 2 Usage \u2014 5");
}

}  // namespace
}  // namespace folio
