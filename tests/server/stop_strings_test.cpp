// StopStrings: what may be sent is never part of a stop string, whatever the pieces' boundaries.
#include "server/stop_strings.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

// The text sent when `pieces` are pushed in turn, and whether it stopped.
std::pair<std::string, bool> run(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopStrings s(std::move(stops));
  std::string out;
  for (const std::string& p : pieces) out += s.push(p);
  out += s.finish();
  return {out, s.stopped()};
}

TEST(StopStrings, CutsAtTheFirstStopWhereverThePiecesBreak) {
  EXPECT_EQ(run({"END"}, {"hello ", "wor", "ld"}), std::make_pair(std::string("hello world"), false));
  EXPECT_EQ(run({"END"}, {"abc", "E", "N", "D", "more"}), std::make_pair(std::string("abc"), true));
  EXPECT_EQ(run({"END"}, {"abcEND", "more"}), std::make_pair(std::string("abc"), true));
  EXPECT_EQ(run({"\n\n", "###"}, {"line\n", "#", "# x\n", "\nnext"}), std::make_pair(std::string("line\n## x"), true));
  // The earliest stop wins, not the first listed.
  EXPECT_EQ(run({"zz", "b"}, {"a b zz"}), std::make_pair(std::string("a "), true));
  // A partial match that turns out not to be one is sent; one the output ends in is sent at finish.
  EXPECT_EQ(run({"END"}, {"EN", "x", "EN"}), std::make_pair(std::string("ENxEN"), false));
}

TEST(StopStrings, HeldTextIsNeverSentEarly) {
  StopStrings s({"</answer>"});
  EXPECT_EQ(s.push("42</ans"), "42");
  EXPECT_EQ(s.push("w"), "");
  EXPECT_EQ(s.push("er> tail"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("after"), "");
  EXPECT_EQ(s.finish(), "");
  StopStrings t({"</answer>"});
  EXPECT_EQ(t.push("<"), "");
  EXPECT_EQ(t.push("b>"), "<b>");
  EXPECT_FALSE(t.stopped());
}

}  // namespace
}  // namespace folio
