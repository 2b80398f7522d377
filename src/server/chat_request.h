// ChatRequest: an OpenAI /v1/chat/completions body, parsed and checked, and the chat template that
// turns its messages into the prompt text.
//
// Supported: model, messages (role system | developer | user | assistant; content a string or a
// list of {"type": "text"} parts), max_tokens / max_completion_tokens, temperature, top_p, seed,
// stream, stream_options, n (1-16), stop, logprobs / top_logprobs, and two vLLM extensions: return_token_ids
// (the generated ids are added to each choice) and ignore_eos (generate max_tokens whatever comes,
// for benchmarks). Other fields are ignored, as OpenAI clients
// send many optional ones. Image parts ({"type": "image_url", "image_url": {"url": "data:image/png;
// base64,..."}} or "image_url": "<data URI>") must be base64 data URIs of a PNG, JPEG or PDF (the
// server fetches nothing); they are collected, in order, as the pages an OCR model reads.
//
// Deviation from OpenAI: temperature defaults to 0 (greedy), the decoding OCR models are run with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/ocr_request.h"

namespace folio {

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatRequest {
  std::string model;  // "" if not given
  std::vector<ChatMessage> messages;
  std::optional<int64_t> max_tokens;
  float temperature = 0.f;
  float top_p = 1.f;
  uint64_t seed = 0;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage and no choices
  bool return_token_ids = false;
  bool ignore_eos = false;
  int n = 1;              // choices, 1-16: sequences generated side by side (choice i samples with seed + i)
  int top_logprobs = -1;  // -1: no logprobs; else the alternatives reported per token (token_logprobs.h)
  std::vector<std::string> stop;  // up to 4 non-empty strings: the output ends before the first found
  std::vector<UploadedFile> images;  // image_url parts of every message, in order
};

// Throws ApiError (400) naming the field for malformed JSON, a wrong type or an out-of-range value.
ChatRequest parse_chat_request(std::string_view body);

// The fields every generation request shares (all but model, messages and images): limits,
// sampling, stream and stream_options, n, stop, the vLLM extensions, and the refusal of parameters
// this server does not implement (unsupported_parameter). ApiError 400 as parse_chat_request.
void parse_generation_fields(const nlohmann::json& j, ChatRequest& r);

// The prompt text: each message as "<|role|>\n" + content + "\n", then "<|assistant|>\n" to cue the
// reply (a developer message is a system message). The caller prepends BOS when the model has one.
std::string chat_prompt_text(const std::vector<ChatMessage>& messages);

}  // namespace folio
