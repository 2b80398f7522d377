// folio-mini-ocr 2's page layout in C++ against its Python reference (tools/train/mini2/layout.py):
// tests/fixtures/mini2 holds a page typeset by WeasyPrint (a spanning title, two justified columns,
// a ruled table, a list, two table-of-contents lines (a dense dot leader: the crop rule's fallback
// core), a code block, a centred page number) rendered at 150 DPI, and what the
// reference found on it (tools/fixtures/make_layout_fixture.py): every line's box, column, region,
// x-height and gap, every segment's box, crop width and ink sums, and a few crops value by value.
#include "vision/page_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "doc/gray_page.h"
#include "doc/image.h"
#include "kernels/cpu/resize_float.h"
#include "io/safetensors.h"

namespace folio {
namespace {

const std::string kDir = std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/mini2/";

struct Fixture {
  std::vector<uint8_t> gray;
  int width = 0, height = 0;
  std::unique_ptr<SafetensorsCheckpoint> expected;
};

Fixture load_fixture() {
  Fixture f;
  const RgbImage page = load_image(kDir + "layout_page.png");
  f.gray = gray_bytes(page);
  f.width = page.width, f.height = page.height;
  f.expected = SafetensorsCheckpoint::open(kDir + "layout_golden.safetensors");
  return f;
}

double sum(const std::vector<float>& v, bool squares) {
  double s = 0;
  for (float x : v) s += squares ? double(x) * x : x;
  return s;
}

std::vector<const LineSegment*> all_segments(const PageLayout& layout) {
  std::vector<const LineSegment*> out;
  for (const LayoutLine& l : layout.lines)
    for (const LineSegment& s : l.segments) out.push_back(&s);
  return out;
}

TEST(PageLayout, MatchesThePythonReferenceOnATwoColumnPage) {
  const Fixture f = load_fixture();
  const PageLayout layout = find_layout(f.gray.data(), f.width, f.height);
  const std::vector<float> lines = to_f32_vector(f.expected->get("lines")), segs = to_f32_vector(f.expected->get("segments"));
  ASSERT_EQ(layout.lines.size() * 10, lines.size());
  for (size_t i = 0; i < layout.lines.size(); ++i) {
    const LayoutLine& l = layout.lines[i];
    const float* e = lines.data() + 10 * i;
    const std::vector<int> got = {l.x0, l.y0, l.x1, l.y1, l.column, l.columns, l.region_x0, l.region_x1, l.x_height, l.gap_before};
    for (int k = 0; k < 10; ++k) EXPECT_EQ(got[k], e[k]) << "line " << i << " field " << k;
  }
  // The page's shape: a title over both columns first, both columns, the page number last.
  EXPECT_EQ(layout.lines.front().columns, 1);
  EXPECT_EQ(layout.lines.back().columns, 1);
  EXPECT_EQ(layout.lines[1].columns, 2);
  const std::vector<const LineSegment*> got = all_segments(layout);
  ASSERT_EQ(got.size() * 6, segs.size());
  int compared = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const float* e = segs.data() + 6 * k;
    EXPECT_EQ(got[k]->x0, e[1]) << k;
    EXPECT_EQ(got[k]->x1, e[2]) << k;
    EXPECT_EQ(got[k]->crop.width, e[3]) << k;
    // Float rounding only: sums of a few thousand values in [0, 1], stored as f32.
    EXPECT_NEAR(sum(got[k]->crop.ink, false), e[4], 1e-3 * std::max(1.0f, e[4])) << k;
    EXPECT_NEAR(sum(got[k]->crop.ink, true), e[5], 1e-3 * std::max(1.0f, e[5])) << k;
    const std::string name = "crop_" + std::to_string(k);
    if (!f.expected->contains(name)) continue;
    const std::vector<float> want = to_f32_vector(f.expected->get(name));
    ASSERT_EQ(want.size(), got[k]->crop.ink.size()) << name;
    float err = 0;
    for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(want[i] - got[k]->crop.ink[i]));
    EXPECT_LT(err, 1e-3f) << name;  // the reference's crops are stored in f16 (relative step 2^-11)
    ++compared;
  }
  EXPECT_EQ(compared, 5);
}

// A borderless table of names and descriptions (monospace, rows pairing up across a quiet strip)
// between paragraphs that cross the strip: one column, read row by row, as the reference reads it
// (tools/fixtures/make_layout_fixture.py asserts that only the table rule turns the strip down).
// Lines of `page_png` as the reference found them (`golden`: lines [n, 10], segments [m, 6], led [n]).
PageLayout expect_reference_lines(const std::string& page_png, const std::string& golden) {
  const RgbImage page = load_image(kDir + page_png);
  const std::vector<uint8_t> gray = gray_bytes(page);
  const auto expected = SafetensorsCheckpoint::open(kDir + golden);
  PageLayout layout = find_layout(gray.data(), page.width, page.height);
  const std::vector<float> lines = to_f32_vector(expected->get("lines")), segs = to_f32_vector(expected->get("segments"));
  const std::vector<float> led = to_f32_vector(expected->get("led"));
  EXPECT_EQ(layout.lines.size() * 10, lines.size());
  EXPECT_EQ(layout.lines.size(), led.size());
  for (size_t i = 0; i < layout.lines.size() && 10 * i < lines.size() && i < led.size(); ++i) {
    const LayoutLine& l = layout.lines[i];
    const float* e = lines.data() + 10 * i;
    const std::vector<int> got = {l.x0, l.y0, l.x1, l.y1, l.column, l.columns, l.region_x0, l.region_x1, l.x_height, l.gap_before};
    for (int k = 0; k < 10; ++k) EXPECT_EQ(got[k], e[k]) << page_png << " line " << i << " field " << k;
    EXPECT_EQ(l.led, led[i] != 0) << page_png << " line " << i;
  }
  const std::vector<const LineSegment*> got = all_segments(layout);
  EXPECT_EQ(got.size() * 6, segs.size());
  for (size_t k = 0; k < got.size() && 6 * k < segs.size(); ++k) {
    const float* e = segs.data() + 6 * k;
    EXPECT_EQ(got[k]->x0, e[1]) << page_png << " segment " << k;
    EXPECT_EQ(got[k]->x1, e[2]) << page_png << " segment " << k;
    EXPECT_EQ(got[k]->crop.width, e[3]) << page_png << " segment " << k;
    EXPECT_NEAR(sum(got[k]->crop.ink, false), e[4], 1e-3 * std::max(1.0f, e[4])) << page_png << " segment " << k;
  }
  return layout;
}

// A LaTeX report's table of contents: its leaders' dots stand on one grid down the page, and their
// columns were clean gutters (the page was read as columns of dots). With the leaders erased
// (dot_leaders.h) it is one column of entries, each led section a title and a page number apart,
// as the reference reads it (the fixture script asserts the columns without the erasing). Its page
// numbers are cropped with their lines' cores (kNarrowSegment), as the reference crops them.
TEST(PageLayout, AContentsPageIsOneColumnOfEntriesWithoutLeaders) {
  const PageLayout layout = expect_reference_lines("contents_page.png", "contents_golden.safetensors");
  int led = 0;
  for (const LayoutLine& l : layout.lines) {
    EXPECT_EQ(l.columns, 1);
    if (!l.led) continue;
    ++led;
    EXPECT_GE(l.segments.size(), 2u) << "a led entry's title and page number are segments apart";
    EXPECT_LT(l.segments.back().x1 - l.segments.back().x0, 3 * l.x_height) << "the last segment is the page number alone";
  }
  EXPECT_GE(led, 8);
}

// A two-column index, each term led by dots to its page number: looked for with each leader a bar
// of ink (leader_bar), the columns are the index's; with the leaders only erased, the left column's
// terms and numbers stood apart as columns of their own (the fixture script asserts the difference).
TEST(PageLayout, ATwoColumnIndexWithLeadersIsTwoColumnsOfEntries) {
  const PageLayout layout = expect_reference_lines("index_page.png", "index_golden.safetensors");
  int led = 0, left = 0, right = 0;
  for (const LayoutLine& l : layout.lines) {
    if (!l.led) continue;
    ++led;
    EXPECT_EQ(l.columns, 2);
    (l.column == 0 ? left : right)++;
    EXPECT_EQ(l.segments.size(), 2u) << "a term and its page number";
  }
  EXPECT_GE(left, 15);
  EXPECT_GE(right, 15);
  EXPECT_EQ(led, left + right);
}

// A table of contents without leaders: wrapped titles filling their side, a page number at the
// right margin beside each first line. The numbers' quiet strip is no gutter: every band right of it
// is a page number beside a title (kNumberSide; the fixture script asserts two columns without it).
TEST(PageLayout, PageNumbersBesideTitlesAreNoColumn) {
  const PageLayout layout = expect_reference_lines("contents_noleader_page.png", "contents_noleader_golden.safetensors");
  int numbered = 0;
  for (const LayoutLine& l : layout.lines) {
    EXPECT_EQ(l.columns, 1);
    numbered += l.segments.size() == 2 && l.segments.back().x1 - l.segments.back().x0 < 3 * l.x_height;
  }
  EXPECT_GE(numbered, 10);
}

// A borderless table of names and descriptions (monospace, rows pairing up across a quiet strip)
// between paragraphs that cross the strip: one column, read row by row, as the reference reads it
// (tools/fixtures/make_layout_fixture.py asserts that only the table rule turns the strip down).
TEST(PageLayout, ATableWithoutRulesIsOneColumnReadRowByRow) {
  const PageLayout layout = expect_reference_lines("table_page.png", "table_golden.safetensors");
  int rows_with_cells = 0;  // table rows: name, type and description segments on one line
  for (const LayoutLine& l : layout.lines) {
    EXPECT_EQ(l.columns, 1);
    rows_with_cells += l.segments.size() >= 3;
  }
  EXPECT_GE(rows_with_cells, 18);
}

// Lines read in three columns, left to right, from line `first` on.
void expect_three_columns_in_order(const PageLayout& layout, size_t first) {
  int last_column = 0;
  for (size_t i = first; i < layout.lines.size(); ++i) {
    EXPECT_EQ(layout.lines[i].columns, 3) << i;
    EXPECT_GE(layout.lines[i].column, last_column) << "columns are read left to right";
    last_column = layout.lines[i].column;
  }
  EXPECT_EQ(last_column, 2);
}

// A reference card in three ragged columns under a title over the first two: the page's clean
// gutter (between the second and third columns), then the left side's own, read left to right (the
// fixture script asserts three columns).
TEST(PageLayout, AReferenceCardReadsInThreeColumns) {
  const PageLayout layout = expect_reference_lines("card_page.png", "card_golden.safetensors");
  ASSERT_GT(layout.lines.size(), 10u);
  const LayoutLine& title = layout.lines.front();
  EXPECT_EQ(title.column, 0);
  EXPECT_GT(title.region_x1, layout.lines[1].region_x1) << "the title spans the first two columns";
  expect_three_columns_in_order(layout, 1);
}

// A landscape card whose ragged columns stand 0.1 inch apart (under kGutterMin) with their lines in
// one leading: read through its clean gutters, the split side's equal halves as columns though
// their lines pair up row by row (the fixture script asserts that without clean gutters the page is
// not read in three columns).
TEST(PageLayout, ANarrowGutterCardReadsInThreeColumns) {
  const PageLayout layout = expect_reference_lines("narrow_card_page.png", "narrow_card_golden.safetensors");
  ASSERT_GT(layout.lines.size(), 60u);
  expect_three_columns_in_order(layout, 0);
  const auto second = std::find_if(layout.lines.begin(), layout.lines.end(), [](const LayoutLine& l) { return l.column == 1; });
  ASSERT_NE(second, layout.lines.end());
  EXPECT_LT(second->region_x0 - layout.lines.front().region_x1, PageLayoutRule::kGutterMin * 1650);
}

// A document's last page: a full first column, a second of a few lines, a centred page number in
// the gutter's columns below them. Read in two columns through the clean gutter (the number does
// not count against it, and a short second column has ink beside the first on fewer rows than a
// full page's: the fixture script asserts that the page needs kBothSidesClean), the number last.
TEST(PageLayout, ALastPageWithAShortSecondColumnReadsInTwoColumns) {
  const PageLayout layout = expect_reference_lines("last_page.png", "last_golden.safetensors");
  ASSERT_GT(layout.lines.size(), 40u);
  int left = 0, right = 0;
  for (size_t i = 0; i + 1 < layout.lines.size(); ++i) {
    EXPECT_EQ(layout.lines[i].columns, 2) << i;
    (layout.lines[i].column == 0 ? left : right)++;
    if (i > 0) {
      EXPECT_GE(layout.lines[i].column, layout.lines[i - 1].column) << "the first column is read first";
    }
  }
  EXPECT_GT(left, 3 * right);
  EXPECT_GE(right, 6);
  EXPECT_EQ(layout.lines.back().columns, 1) << "the page number, last";
}

// Lines set all but solid, so that descenders and ascenders of neighbouring lines share rows: cut
// apart where their shared rows are thinnest, as the reference cuts them (the fixture script
// asserts that without the cut the page has at least five lines fewer); the heading stays whole.
TEST(PageLayout, TouchingLinesAreCutApart) {
  const PageLayout layout = expect_reference_lines("tight_page.png", "tight_golden.safetensors");
  ASSERT_EQ(layout.lines.size(), 26u);
  std::vector<int> heights;
  for (size_t i = 1; i < layout.lines.size(); ++i) heights.push_back(layout.lines[i].y1 - layout.lines[i].y0);
  const int tallest_text_line = *std::max_element(heights.begin(), heights.end());
  EXPECT_LT(tallest_text_line, 1.6 * *std::min_element(heights.begin(), heights.end())) << "no band holds two lines";
  EXPECT_GT(layout.lines.front().y1 - layout.lines.front().y0, tallest_text_line) << "the heading is one line";
}

// A tall band among bands of specks (1-2 rows of scan noise) and a few lines: the specks do not set
// the typical line height (a cut at every row would never end), and the lines come out whole.
TEST(PageLayout, SpecksDoNotSetTheLineHeight) {
  const int W = 600, H = 600;
  std::vector<uint8_t> page(W * H, 255);
  for (int i = 0; i < 40; ++i) page[(10 + 3 * i) * W + 40 + 7 * i] = 0;  // a speck every third row
  auto text_line = [&](int y0) {  // its top row sparse, as the tops of a few ascenders are
    for (int y = y0; y < y0 + 20; ++y)
      for (int x = 100; x < 500; ++x)
        if ((x / 4) % 2 == 0 && (y > y0 || x % 40 == 0)) page[size_t(y) * W + x] = 0;
  };
  for (int k = 0; k < 5; ++k) text_line(200 + 30 * k);
  const PageLayout layout = find_layout(page.data(), W, H);
  int text_lines = 0;
  for (const LayoutLine& l : layout.lines) text_lines += l.y1 - l.y0 == 20;
  EXPECT_EQ(text_lines, 5);
}

TEST(PageLayout, TheCropToleranceDiscriminates) {
  // The page with its ink one gray level darker (paper untouched): crops that keep their width
  // change values by at least 1 / (paper - ink) = 1/255, several times the 1e-3 allowed above.
  const Fixture f = load_fixture();
  std::vector<uint8_t> darker = f.gray;
  for (uint8_t& v : darker)
    if (v > 0 && v < 255) --v;
  const PageLayout base = find_layout(f.gray.data(), f.width, f.height);  // alive while `a` points into it
  const auto a = all_segments(base);
  const PageLayout moved = find_layout(darker.data(), f.width, f.height);
  const auto b = all_segments(moved);
  ASSERT_EQ(a.size(), b.size());
  float err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]->crop.width != b[i]->crop.width) continue;
    for (size_t k = 0; k < a[i]->crop.ink.size(); ++k) err = std::max(err, std::fabs(a[i]->crop.ink[k] - b[i]->crop.ink[k]));
  }
  std::printf("one gray level moves the crops by %.4f\n", err);
  EXPECT_GT(err, 3e-3f);
}

TEST(PageLayout, RulesAreNotText) {
  // A ruled box around one word: the box's four rules go (300 and 181 pixels long, past 4% of the
  // width and 5% of the height), the word (20-row strokes) stays one line of one segment.
  const int W = 800, H = 1000;
  std::vector<uint8_t> page(W * H, 255);
  for (int x = 50; x < 350; ++x) page[60 * W + x] = page[240 * W + x] = 0;
  for (int y = 60; y <= 240; ++y) page[y * W + 50] = page[y * W + 349] = 0;
  for (int y = 140; y < 160; ++y)
    for (int x = 150; x < 250; ++x)
      if ((x / 6) % 2 == 0) page[y * W + x] = 0;  // "word": 20 rows of vertical strokes
  const PageLayout layout = find_layout(page.data(), W, H);
  ASSERT_EQ(layout.lines.size(), 1u);
  EXPECT_EQ(layout.lines[0].segments.size(), 1u);
  EXPECT_EQ(layout.lines[0].y0, 140);
  EXPECT_EQ(layout.lines[0].x0, 156);  // the first stroke: columns 156-161
}

TEST(PageLayout, ShortLinesAndAHeaderAtTheRightAreOneColumn) {
  // A man page's shape: short lines on the left, a header part at the right of the first line.
  // The middle is quiet, but rows with ink on both sides of it are too few for two columns.
  const int W = 1000, H = 1400;
  std::vector<uint8_t> page(W * H, 255);
  auto block = [&](int x0, int y0, int x1) {
    for (int y = y0; y < y0 + 16; ++y)
      for (int x = x0; x < x1; ++x)
        if ((x / 5) % 2 == 0) page[size_t(y) * W + x] = 0;
  };
  block(100, 100, 300);
  block(700, 100, 900);
  for (int i = 0; i < 30; ++i) block(100, 150 + 36 * i, 100 + 200 + 7 * (i % 5));
  const PageLayout layout = find_layout(page.data(), W, H);
  ASSERT_EQ(layout.lines.size(), 31u);
  for (const LayoutLine& l : layout.lines) EXPECT_EQ(l.columns, 1);
  EXPECT_EQ(layout.lines[0].segments.size(), 2u);  // the header's two parts, in reading order first
}

TEST(PageLayout, BlankAndTinyPagesGiveNoLines) {
  std::vector<uint8_t> blank(64 * 48, 255);
  EXPECT_TRUE(find_layout(blank.data(), 64, 48).lines.empty());
  std::vector<uint8_t> black(64 * 48, 0);
  EXPECT_TRUE(find_layout(black.data(), 64, 48).lines.empty());
  // One speck two rows high: a band under 3 rows is dropped.
  blank[10 * 64 + 10] = blank[11 * 64 + 10] = 0;
  EXPECT_TRUE(find_layout(blank.data(), 64, 48).lines.empty());
}

TEST(ResizeFloat, MatchesPillowBilinearOnSmallCases) {
  // Pillow 9.4: Image.fromarray(np.array([[0, 1, 2, 3]], np.float32)).resize((2, 1), Image.BILINEAR)
  // -> [0.71428573, 2.2857144]: shrinking by 2 widens the triangle to 2 pixels; output 0 (centre 1)
  // reads pixels 0, 1, 2 with weights 3/4, 3/4, 1/4 renormalised: 1.25 / 1.75.
  const std::vector<float> row = {0, 1, 2, 3};
  const std::vector<float> half = resize_bilinear_f32(row, 4, 1, 2, 1);
  ASSERT_EQ(half.size(), 2u);
  EXPECT_NEAR(half[0], 0.71428573f, 1e-6f);
  EXPECT_NEAR(half[1], 2.2857144f, 1e-6f);
  // Same size is the identity; enlarging interpolates.
  EXPECT_EQ(resize_bilinear_f32(row, 4, 1, 4, 1), row);
  const std::vector<float> twice = resize_bilinear_f32({0, 4}, 2, 1, 4, 1);
  EXPECT_NEAR(twice[0], 0.0f, 1e-6f);
  EXPECT_NEAR(twice[1], 1.0f, 1e-6f);
  EXPECT_NEAR(twice[2], 3.0f, 1e-6f);
  EXPECT_NEAR(twice[3], 4.0f, 1e-6f);
  EXPECT_THROW(resize_bilinear_f32(row, 4, 1, 0, 1), Error);
}

}  // namespace
}  // namespace folio
