#include "server/tokenize_request.h"

#include <limits>

#include "server/json_body.h"

namespace folio {

namespace {

bool optional_bool(const nlohmann::json& j, const char* name) {
  const nlohmann::json* f = json_field(j, name);
  if (!f) return false;
  if (!f->is_boolean()) throw bad_request("invalid_type", std::string("'") + name + "' must be true or false");
  return f->get<bool>();
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body) {
  const nlohmann::json j = parse_json_object(body);
  const nlohmann::json* c = json_field(j, "content");
  if (!c) throw bad_request("missing_field", "'content' is required: the text to tokenize");
  if (!c->is_string()) throw bad_request("invalid_type", "'content' must be a string");
  return {c->get<std::string>(), optional_bool(j, "add_special"), optional_bool(j, "with_pieces")};
}

DetokenizeRequest parse_detokenize_request(std::string_view body) {
  const nlohmann::json j = parse_json_object(body);
  const nlohmann::json* t = json_field(j, "tokens");
  if (!t) throw bad_request("missing_field", "'tokens' is required: the token ids to turn into text");
  if (!t->is_array()) throw bad_request("invalid_type", "'tokens' must be an array of token ids");
  DetokenizeRequest r;
  for (const nlohmann::json& v : *t) {
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw bad_request("invalid_type", "'tokens' must hold integer token ids, got " + v.dump());
    r.tokens.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return r;
}

}  // namespace folio
