// CompletionRequest: an OpenAI /v1/completions body (the text API before chat), parsed and checked.
//
// `prompt` is a string, a list of one string, a list of token ids or a list of one such list
// (several prompts in one request are refused: send one per request; `n` asks for several
// answers); `echo` puts the prompt's text before the answer; `suffix` and `best_of` other than 1
// are refused. Every other field is read as for chat (chat_request.h: parse_generation_fields). As OpenAI's, max_tokens
// defaults to 16 here. Throws ApiError (400) naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_request.h"

namespace folio {

struct CompletionRequest {
  ChatRequest gen;                     // limits, sampling, stream, stop (no messages, no images)
  std::string prompt;                  // the prompt as text, or
  std::vector<int32_t> prompt_tokens;  // as token ids (then `prompt` is empty)
  bool echo = false;
};

CompletionRequest parse_completion_request(std::string_view body);

}  // namespace folio
