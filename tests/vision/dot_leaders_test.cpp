// Dot leaders found on drawn pages: what makes a run of dots a leader (five or more, a regular
// pitch, nothing between them), what does not (an ellipsis, dots with ink between them, specks of
// other sizes), and that erasing one leaves the rest of the page as it was.
#include "vision/dot_leaders.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

struct Drawn {
  int width = 1600, height = 80;  // a dot at most 9 pixels, a gap at most 40
  std::vector<uint8_t> binary = std::vector<uint8_t>(size_t(1600) * 80, 0);
  void box(int x0, int y0, int w, int h) {
    for (int y = y0; y < y0 + h; ++y)
      for (int x = x0; x < x0 + w; ++x) binary[size_t(y) * width + x] = 1;
  }
  void dots(int x0, int y, int n, int pitch, int size = 2) {
    for (int k = 0; k < n; ++k) box(x0 + k * pitch, y, size, size);
  }
};

TEST(DotLeaders, ComponentsAreEightConnected) {
  Drawn d;
  d.box(10, 10, 3, 3);
  d.box(13, 13, 3, 3);  // touches the first at a corner: one component
  d.box(30, 10, 3, 3);
  const std::vector<InkBox> c = ink_components(d.binary, d.width, d.height);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].x0, 10);
  EXPECT_EQ(c[0].x1, 16);
  EXPECT_EQ(c[0].y1, 16);
  EXPECT_EQ(c[0].count, 18);
  EXPECT_EQ(c[1].x0, 30);
}

TEST(DotLeaders, FiveRegularDotsAreALeaderAnEllipsisIsNot) {
  Drawn d;
  d.dots(20, 20, 12, 10);   // a leader
  d.dots(300, 20, 3, 5);    // an ellipsis
  d.dots(20, 50, 4, 10);    // four dots
  const std::vector<DotLeader> l = find_dot_leaders(d.binary, d.width, d.height);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].dots.size(), 12u);
  EXPECT_EQ(l[0].box.x0, 20);
  EXPECT_EQ(l[0].box.x1, 20 + 11 * 10 + 2);
}

TEST(DotLeaders, InkBetweenDotsOrAnIrregularPitchBreaksTheRun) {
  Drawn d;
  d.dots(20, 20, 10, 10);
  d.box(64, 15, 4, 12);      // a letter's stem between the 5th and 6th dots
  d.dots(20, 50, 6, 10);
  d.dots(100, 50, 6, 30);    // the same row, three times the pitch: a run of its own from the 6th dot
  d.box(370, 50, 2, 2);      // a period before a leader, three pitches away
  d.dots(400, 50, 6, 10);
  const std::vector<DotLeader> l = find_dot_leaders(d.binary, d.width, d.height);
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].dots.size(), 5u);  // row 20: up to the stem, then after it
  EXPECT_EQ(l[1].dots.size(), 5u);
  EXPECT_EQ(l[1].box.x0, 70);
  EXPECT_EQ(l[2].dots.size(), 6u);  // row 50, by x0
  EXPECT_EQ(l[3].dots.size(), 7u);
  EXPECT_EQ(l[3].box.x0, 70);
  EXPECT_EQ(l[4].dots.size(), 6u);
  EXPECT_EQ(l[4].box.x0, 400) << "the period is not the leader's";
}

TEST(DotLeaders, LargerMarksAreNoDots) {
  Drawn d;
  for (int k = 0; k < 8; ++k) d.box(20 + 20 * k, 20, 10, 10);  // squares larger than a dot
  for (int k = 0; k < 8; ++k) d.box(20 + 20 * k, 50, 6, 2);    // dashes: wider than tall
  EXPECT_TRUE(find_dot_leaders(d.binary, d.width, d.height).empty());
}

TEST(DotLeaders, ErasingTakesTheDotsAndTheirRimOnly) {
  Drawn d;
  d.dots(100, 30, 8, 10);
  d.box(20, 25, 30, 10);  // a word before the leader
  d.box(200, 25, 8, 10);  // its page number
  InkPage p;
  p.width = d.width, p.height = d.height, p.binary = d.binary;
  p.ink.assign(p.binary.size(), 0.0f);
  for (size_t i = 0; i < p.ink.size(); ++i) p.ink[i] = p.binary[i] ? 1.0f : 0.0f;
  p.ink[size_t(29) * p.width + 100] = 0.3f;  // a dot's anti-aliased rim
  const ErasedLeaders erased = erase_dot_leaders(p);
  ASSERT_EQ(erased.boxes.size(), 1u);
  ASSERT_EQ(erased.bars.size(), 1u);
  EXPECT_EQ(erased.bars[0].x0, 100);
  EXPECT_EQ(erased.bars[0].x1, 172);
  EXPECT_EQ(erased.bars[0].y1, 32);
  EXPECT_EQ(erased.bars[0].y0, 32 - 10) << "as tall as the pitch";
  int ink = 0;
  for (size_t i = 0; i < p.binary.size(); ++i) ink += p.binary[i];
  EXPECT_EQ(ink, 30 * 10 + 8 * 10);
  EXPECT_EQ(p.ink[size_t(29) * p.width + 100], 0.0f);
  EXPECT_EQ(p.ink[size_t(25) * p.width + 20], 1.0f);
}

}  // namespace
}  // namespace folio
