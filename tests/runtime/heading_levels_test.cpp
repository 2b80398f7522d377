// Heading levels settled per document against the Python rules they mirror
// (tools/train/mini2/heading_levels.py): tests/fixtures/mini2/heading_levels_cases.json holds
// documents of line records, the style Python gives each line and the levels it settles for the
// headings the decoder proposed (tools/fixtures/make_heading_levels_fixture.py: 40 documents drawn
// from a few looks with jitter, so that the tolerances' edges are crossed).
#include "runtime/heading_levels.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace folio {
namespace {

ReadLine read_line(const nlohmann::json& r) {
  ReadLine l;
  l.x0 = r["box"][0], l.y0 = r["box"][1], l.x1 = r["box"][2], l.y1 = r["box"][3];
  l.column = r["column"], l.columns = r["columns"], l.region_x0 = r["region"][0], l.region_x1 = r["region"][1];
  l.x_height = r["xh"], l.gap_before = r["gap_before"];
  for (const auto& s : r["segments"]) l.segments.push_back({s["x"][0], s["x"][1], s["text"], s["ink"]});
  return l;
}

std::vector<std::vector<LineStyle>> styles_of(const nlohmann::json& doc) {
  std::vector<std::vector<LineStyle>> out;
  for (const auto& page : doc["pages"]) {
    std::vector<ReadLine> lines;
    for (const auto& r : page) lines.push_back(read_line(r));
    out.push_back(page_line_styles(lines));
  }
  return out;
}

TEST(HeadingLevels, SettlesWhatThePythonRulesSettle) {
  std::ifstream in(std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/heading_levels_cases.json");
  const nlohmann::json docs = nlohmann::json::parse(in);
  ASSERT_GE(docs.size(), 40u);
  int changed = 0;
  for (size_t d = 0; d < docs.size(); ++d) {
    const auto styles = styles_of(docs[d]);
    for (size_t p = 0; p < styles.size(); ++p)
      for (size_t i = 0; i < styles[p].size(); ++i) {
        const auto& want = docs[d]["styles"][p][i];
        const LineStyle& got = styles[p][i];
        EXPECT_NEAR(got.size, want["size"].get<double>(), 1e-12) << d << " " << p << " " << i;
        EXPECT_NEAR(got.weight, want["weight"].get<double>(), 1e-12);
        EXPECT_NEAR(got.indent, want["indent"].get<double>(), 1e-12);
        EXPECT_EQ(got.caps, want["caps"].get<bool>());
        EXPECT_EQ(got.centred, want["centred"].get<bool>());
      }
    HeadingLevels levels;
    for (const auto& h : docs[d]["headings"]) {
      const LineStyle& s = styles[h[0].get<size_t>()][h[1].get<size_t>()];
      const int level = levels.level(s, h[2].get<int>());
      EXPECT_EQ(level, h[3].get<int>()) << "document " << d;
      levels.note(s, level);
      changed += level != h[2].get<int>();
    }
  }
  EXPECT_GT(changed, 40);  // the cases exercise both rules, not only the proposals
}

LineStyle look(double size, double weight, bool caps = false, double indent = 0) {
  LineStyle s;
  s.size = size, s.weight = weight, s.caps = caps, s.indent = indent;
  return s;
}

TEST(HeadingLevels, LookAlikesShareALevelAndNoLevelIsSkipped) {
  HeadingLevels levels;
  const LineStyle title = look(1.6, 1.0), section = look(1.25, 1.4);
  EXPECT_EQ(levels.level(title, 1), 1);
  levels.note(title, 1);
  EXPECT_EQ(levels.level(section, 3), 2);  // not a subsection straight under the title
  levels.note(section, 2);
  EXPECT_EQ(levels.level(look(1.3, 1.45), 3), 2);  // looks like the section: its level
  EXPECT_EQ(levels.level(look(1.25, 1.4, true), 3), 3);  // capitals: another look
  EXPECT_EQ(levels.level(look(1.25, 1.4, false, 4), 3), 3);  // set in: another look
  EXPECT_EQ(levels.level(look(1.0, 1.4), 1), 1);  // a new look may go up
}

TEST(HeadingLevels, TheFirstHeadingKeepsItsProposal) {
  HeadingLevels levels;
  EXPECT_EQ(levels.level(look(1.2, 1.3), 3), 3);
}

TEST(LineStyle, CentredNeedsIndentAndACentre) {
  auto line = [](int x0, int x1, std::string text) {
    ReadLine l;
    l.x0 = x0, l.x1 = x1, l.region_x0 = 100, l.region_x1 = 1100, l.x_height = 10;
    l.segments.push_back({x0, x1, std::move(text), 0.1});
    return l;
  };
  const auto styles = page_line_styles({line(100, 1100, "body text"), line(500, 700, "A Title"), line(100, 300, "NAME"),
                                        line(140, 300, "Ab")});
  EXPECT_FALSE(styles[0].centred);
  EXPECT_TRUE(styles[1].centred);
  EXPECT_TRUE(styles[2].caps);
  EXPECT_FALSE(styles[3].caps);  // one capital in two letters
  EXPECT_FALSE(styles[3].centred);
  EXPECT_DOUBLE_EQ(styles[3].indent, 4.0);
}

}  // namespace
}  // namespace folio
