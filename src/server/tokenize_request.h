// The bodies of POST /tokenize and /detokenize, as llama-server has them: text to token ids and
// back with the served model's tokenizer, for clients that count or inspect tokens.
//
//   /tokenize    {"content": "text", "add_special": false, "with_pieces": false}
//                -> {"tokens": [ids]}, or with pieces {"tokens": [{"id": 1, "piece": "..."}]}
//   /detokenize  {"tokens": [ids]} -> {"content": "text"}
//
// add_special puts the model's BOS first (when it has one). Parsing throws ApiError 400 naming the
// field (invalid_json, missing_field, invalid_type); ids outside the vocabulary are the caller's
// check (400 invalid_value).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool with_pieces = false;
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;
};

TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace folio
