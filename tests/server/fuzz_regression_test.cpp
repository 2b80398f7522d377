// Request bodies the fuzzers (fuzz/, docs/fuzzing.md) found mishandled, kept as regressions.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "server/chat_request.h"
#include "server/ocr_request.h"

namespace folio {
namespace {

// Runs f and returns the ApiError it throws (status 0 when it throws nothing).
ApiError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "no error", "");
}

// nlohmann reports a number beyond double's range (1e400) while parsing as out_of_range, not
// parse_error; it escaped the parsers and the server answered 500 internal_error. It is a body the
// client must fix: 400 invalid_json.
TEST(FuzzRegression, NumberBeyondDoubleRangeIsInvalidJson) {
  // chat_request_fuzz's reproducer, byte for byte (fuzz/corpus/chat_request_fuzz/regress-number-overflow.json).
  const std::string chat_repro = "{\"me/ssages\":[88888888888e372,$/9j/{3\t\"Aeg;bausers{4\"A";
  for (const std::string& body : {chat_repro, std::string(R"({"messages":[{"role":"user","content":"hi"}],"temperature":1e400})")}) {
    SCOPED_TRACE(body);
    const ApiError e = error_of([&] { parse_chat_request(body); });
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "invalid_json");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
  }
  // ocr_request_fuzz's reproducer was a bare 329-digit number; here in a field too.
  const std::string big(400, '3');
  for (const std::string& body : {big, "{\"max_tokens\":" + big + "}", std::string(R"({"file":"Zm9v","max_tokens":-1e999})")}) {
    SCOPED_TRACE(body);
    const ApiError e = error_of([&] { parse_ocr_json(body); });
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "invalid_json");
  }
  // Large numbers that fit a double are still values, judged by the field's own rules.
  EXPECT_EQ(error_of([] { parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"temperature":1e300})"); }).code,
            "invalid_value");
}

// A top_p below float's range passed the (0, 1] check as a double and became 0 as a float, which
// the sampler then refuses (seen while writing chat_request_fuzz's checks on parsed requests).
TEST(FuzzRegression, TinyTopPStaysPositive) {
  const ChatRequest r = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"top_p":1e-50})");
  EXPECT_GT(r.top_p, 0.f);
  EXPECT_LE(r.top_p, 1e-30f);
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"top_p":0.25})").top_p, 0.25f);
  EXPECT_EQ(error_of([] { parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"top_p":0})"); }).code, "invalid_value");
}

}  // namespace
}  // namespace folio
