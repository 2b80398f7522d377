#include "server/completion_request.h"

#include "server/json_body.h"

namespace folio {

namespace {

using nlohmann::json;

bool token_list(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const json& t : v)
    if (!t.is_number_integer()) return false;
  return true;
}

// The one prompt of `p` into `r` (text or token ids).
void read_prompt(const json& p, CompletionRequest& r) {
  const json* one = &p;
  if (p.is_array() && !p.empty() && (p[0].is_string() || p[0].is_array())) {
    if (p.size() > 1) throw bad_request("unsupported_parameter", "several prompts in one request are not supported: send one per request");
    one = &p[0];
  }
  if (one->is_string()) {
    r.prompt = one->get<std::string>();
    if (r.prompt.empty()) throw bad_request("invalid_value", "'prompt' must not be empty");
    return;
  }
  if (!token_list(*one)) throw bad_request("invalid_type", "'prompt' must be a string, a list of token ids, or a list of one of those");
  for (const json& t : *one) {
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > INT32_MAX) throw bad_request("invalid_value", "'prompt' holds token id " + std::to_string(id) + ", outside [0, 2^31)");
    r.prompt_tokens.push_back(static_cast<int32_t>(id));
  }
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body) {
  const json j = parse_json_object(body);
  CompletionRequest r;
  r.gen.model = json_model_field(j);
  const json* p = json_field(j, "prompt");
  if (!p) throw bad_request("missing_field", "'prompt' is required");
  read_prompt(*p, r);
  if (const json* s = json_field(j, "suffix"))
    if (!s->is_string() || !s->get<std::string>().empty()) throw bad_request("unsupported_parameter", "'suffix' is not supported by this server");
  if (const json* b = json_field(j, "best_of"))
    if (!b->is_number_integer() || b->get<int64_t>() != 1) throw bad_request("unsupported_parameter", "'best_of' other than 1 is not supported by this server");
  if (const json* e = json_field(j, "echo")) {
    if (!e->is_boolean()) throw bad_request("invalid_type", "'echo' must be true or false");
    r.echo = e->get<bool>();
  }
  parse_generation_fields(j, r.gen);
  if (!r.gen.max_tokens) r.gen.max_tokens = 16;
  return r;
}

}  // namespace folio
