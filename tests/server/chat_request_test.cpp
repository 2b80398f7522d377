// parse_chat_request: OpenAI parameters the server does not implement are refused by name (400
// unsupported_parameter), their neutral values (which SDKs send by default) pass, and `stop` and
// `max_completion_tokens` are read.
#include "server/chat_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace folio {
namespace {

using nlohmann::json;

json base() { return {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }

// The code and message of the error parsing `extra` merged into a valid request gives ("" if none).
std::pair<std::string, std::string> error_of(const json& extra) {
  json j = base();
  j.update(extra);
  try {
    parse_chat_request(j.dump());
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return {e.code, e.what()};
  }
  return {"", ""};
}

TEST(ChatRequest, UnsupportedParametersAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"tools", json::array({{{"type", "function"}}})}}, "'tools'"},
      {{{"tool_choice", "auto"}}, "'tool_choice'"},
      {{{"response_format", {{"type", "json_schema"}}}}, "'response_format'"},
      {{{"logit_bias", {{"50256", -100}}}}, "'logit_bias'"},
      {{{"presence_penalty", 0.5}}, "'presence_penalty'"},
      {{{"frequency_penalty", -1}}, "'frequency_penalty'"},
      {{{"modalities", json::array({"text", "audio"})}}, "'modalities'"},
  };
  for (const auto& [extra, name] : refused) {
    const auto [code, message] = error_of(extra);
    EXPECT_EQ(code, "unsupported_parameter") << extra.dump();
    EXPECT_NE(message.find(name), std::string::npos) << message;
  }
  // Neutral values and nulls pass.
  for (const json& ok : {json{{"logprobs", false}}, json{{"presence_penalty", 0}, {"frequency_penalty", 0.0}},
                         json{{"response_format", {{"type", "text"}}}}, json{{"logit_bias", json::object()}},
                         json{{"tools", nullptr}}, json{{"modalities", json::array({"text"})}}, json{{"user", "u-1"}}})
    EXPECT_EQ(error_of(ok).first, "") << ok.dump();
}

TEST(ChatRequest, LogprobsAreReadAndCheckedAsOpenAiDoes) {
  json j = base();
  EXPECT_EQ(parse_chat_request(j.dump()).top_logprobs, -1);
  j["logprobs"] = true;
  EXPECT_EQ(parse_chat_request(j.dump()).top_logprobs, 0);
  j["top_logprobs"] = 20;
  EXPECT_EQ(parse_chat_request(j.dump()).top_logprobs, 20);
  j["logprobs"] = 3;  // the completions API's form
  j.erase("top_logprobs");
  EXPECT_EQ(parse_chat_request(j.dump()).top_logprobs, 3);
  EXPECT_EQ(error_of({{"logprobs", 6}}).first, "invalid_value");
  EXPECT_EQ(error_of({{"logprobs", "yes"}}).first, "invalid_type");
  EXPECT_EQ(error_of({{"logprobs", true}, {"top_logprobs", 21}}).first, "invalid_value");
  EXPECT_EQ(error_of({{"top_logprobs", 2}}).first, "invalid_value");  // without logprobs: true
}

TEST(ChatRequest, StopAndMaxCompletionTokensAreRead) {
  json j = base();
  j["stop"] = "END";
  j["max_completion_tokens"] = 7;
  ChatRequest r = parse_chat_request(j.dump());
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.max_tokens, 7);
  j["stop"] = json::array({"a", "bb"});
  EXPECT_EQ(parse_chat_request(j.dump()).stop, (std::vector<std::string>{"a", "bb"}));
  EXPECT_EQ(error_of({{"stop", json::array({"a", ""})}}).first, "invalid_value");
  EXPECT_EQ(error_of({{"stop", json::array({"1", "2", "3", "4", "5"})}}).first, "invalid_type");
}

}  // namespace
}  // namespace folio
