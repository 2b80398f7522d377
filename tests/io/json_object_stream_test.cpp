// JsonObjectStream writes, element by element, exactly the bytes nlohmann's dump(2) writes for the
// whole object, and refuses members it could not place where dump(2) puts them.
#include "io/json_object_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace folio {
namespace {

using nlohmann::json;

// The object streamed: before's members, the elements one by one, after's members.
std::string streamed(const json& before, const json& elements, const json& after) {
  std::string out;
  JsonObjectStream s("pages", [&](std::string_view piece) { out.append(piece); });
  s.begin(before);
  for (const json& e : elements) s.element(e);
  s.end(after);
  return out;
}

std::string whole(json before, const json& elements, const json& after) {
  json all = before.is_null() ? json::object() : before;
  all["pages"] = elements;
  for (const auto& [k, v] : after.items()) all[k] = v;
  return all.dump(2);
}

TEST(JsonObjectStream, BytesEqualTheWholeDump) {
  const json before = {{"mode", "base"}, {"model", "m\"x"}};
  const json pages = json::array(
      {{{"page", 1}, {"markdown", "# Title\n\nline \"two\"\ttab"}, {"blocks", json::array({{{"boxes", {{1, 2, 3, 4}}}, {"label", "text"}}})}},
       {{"page", 2}, {"markdown", "\xc3\xa9t\xc3\xa9 \xe2\x80\x94 U+2014"}, {"blocks", json::array()}, {"empty", json::object()}},
       json::array({1, json::array(), "three"}),
       42});
  const json after = {{"stats", {{"pages", 2}, {"stop_reasons", {"eos", "length"}}}}, {"warnings", {"w1"}}};
  EXPECT_EQ(streamed(before, pages, after), whole(before, pages, after));
  EXPECT_EQ(streamed(before, json::array(), after), whole(before, json::array(), after));  // no elements: []
  EXPECT_EQ(streamed(json(), pages, json::object()), whole(json(), pages, json::object()));
  EXPECT_EQ(streamed(json::object(), json::array({json::object()}), json()), whole(json::object(), json::array({json::object()}), json()));
}

TEST(JsonObjectStream, RefusesMembersDumpWouldPlaceElsewhere) {
  std::string out;
  JsonObjectStream s("pages", [&](std::string_view piece) { out.append(piece); });
  EXPECT_THROW(s.begin({{"stats", 1}}), Error);  // sorts after "pages"
  EXPECT_TRUE(out.empty());
  EXPECT_THROW(s.element(1), Error);  // before begin()
  s.begin({{"model", "m"}});
  s.element(1);
  EXPECT_THROW(s.end({{"mode", "base"}}), Error);  // sorts before "pages"
  s.end({{"stats", 1}});
  EXPECT_THROW(s.end({}), Error);  // twice
  EXPECT_EQ(out, whole({{"model", "m"}}, json::array({1}), {{"stats", 1}}));
}

}  // namespace
}  // namespace folio
