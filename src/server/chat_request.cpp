#include "server/chat_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/base64.h"
#include "server/json_body.h"

namespace folio {

namespace {

using nlohmann::json;

double number(const json& v, const char* name) {
  if (!v.is_number()) throw bad_request("invalid_type", std::string("'") + name + "' must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) throw bad_request("invalid_value", std::string("'") + name + "' must be finite");
  return d;
}

int64_t integer(const json& v, const char* name) {
  if (!v.is_number_integer()) throw bad_request("invalid_type", std::string("'") + name + "' must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw bad_request("invalid_value", std::string("'") + name + "' is too large");
  return v.get<int64_t>();
}

std::string message_content(const json& c, size_t i, std::vector<UploadedFile>& images) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw bad_request("invalid_type", "'" + where + "' must be a string or a list of content parts");
  std::string text;
  for (size_t k = 0; k < c.size(); ++k) {
    const json& part = c[k];
    const std::string pw = where + "[" + std::to_string(k) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw bad_request("invalid_type", "'" + pw + "' must be an object with a string 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) throw bad_request("invalid_type", "'" + pw + ".text' must be a string");
      text += part["text"].get<std::string>();
    } else if (type == "image_url") {
      const json* iu = part.contains("image_url") ? &part["image_url"] : nullptr;
      const json* url = iu && iu->is_object() && iu->contains("url") ? &(*iu)["url"] : iu;
      if (!url || !url->is_string())
        throw bad_request("invalid_type", "'" + pw + ".image_url' must be {\"url\": \"data:image/png;base64,...\"} or a data URI string");
      DataUri d = parse_data_uri(url->get<std::string>(), pw + ".image_url");
      UploadedFile f;
      f.name = "image-" + std::to_string(images.size() + 1);
      f.type = check_file_type(d.bytes, d.media_type, f.name + " ('" + pw + "')");
      f.bytes = std::move(d.bytes);
      images.push_back(std::move(f));
    } else {
      throw bad_request("invalid_value", "'" + pw + ".type' must be 'text' or 'image_url', got '" + type + "'");
    }
  }
  return text;
}

// Chat: "logprobs": true and "top_logprobs": 0-20. Completions: "logprobs": 0-5, the alternatives.
void read_logprobs(const json& j, ChatRequest& r) {
  const json* l = json_field(j, "logprobs");
  const json* top = json_field(j, "top_logprobs");
  if (l && l->is_number_integer()) {
    const int64_t k = l->get<int64_t>();
    if (k < 0 || k > 5) throw bad_request("invalid_value", "'logprobs' must be between 0 and 5, got " + std::to_string(k));
    r.top_logprobs = static_cast<int>(k);
  } else if (l) {
    if (!l->is_boolean()) throw bad_request("invalid_type", "'logprobs' must be true or false (or, for completions, 0-5)");
    if (l->get<bool>()) r.top_logprobs = 0;
  }
  if (!top) return;
  const int64_t k = integer(*top, "top_logprobs");
  if (k < 0 || k > 20) throw bad_request("invalid_value", "'top_logprobs' must be between 0 and 20, got " + std::to_string(k));
  if (r.top_logprobs < 0) throw bad_request("invalid_value", "'top_logprobs' needs 'logprobs': true");
  r.top_logprobs = static_cast<int>(k);
}

// OpenAI parameters this server does not implement, refused rather than silently ignored when they
// would change the answer (their neutral values pass: SDKs send some of them by default).
void refuse_unsupported(const json& j) {
  auto refuse = [](const std::string& what) { throw bad_request("unsupported_parameter", what + " is not supported by this server"); };
  for (const char* k : {"tools", "functions", "tool_choice", "function_call", "audio", "prediction", "web_search_options"})
    if (json_field(j, k)) refuse(std::string("'") + k + "'");
  if (const json* f = json_field(j, "response_format"))
    if (!f->is_object() || f->value("type", "") != "text") refuse("'response_format' other than {\"type\": \"text\"}");
  if (const json* b = json_field(j, "logit_bias"))
    if (!b->is_object() || !b->empty()) refuse("'logit_bias'");
  for (const char* k : {"presence_penalty", "frequency_penalty"})
    if (const json* p = json_field(j, k))
      if (!p->is_number() || p->get<double>() != 0) refuse(std::string("'") + k + "' other than 0");
  if (const json* m = json_field(j, "modalities"))
    if (*m != json::array({"text"})) refuse("'modalities' other than [\"text\"]");
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body) {
  const json j = parse_json_object(body);
  ChatRequest r;
  r.model = json_model_field(j);
  const json* msgs = json_field(j, "messages");
  if (!msgs) throw bad_request("missing_field", "'messages' is required");
  if (!msgs->is_array() || msgs->empty()) throw bad_request("invalid_value", "'messages' must be a non-empty list");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_request("invalid_type", "'" + where + "' must be an object");
    const json* role = json_field(m, "role");
    if (!role || !role->is_string()) throw bad_request("invalid_type", "'" + where + ".role' must be a string");
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant")
      throw bad_request("invalid_value", "'" + where + ".role' must be system, developer, user or assistant, got '" + cm.role + "'");
    const json* content = json_field(m, "content");
    if (!content) throw bad_request("missing_field", "'" + where + ".content' is required");
    cm.content = message_content(*content, i, r.images);
    r.messages.push_back(std::move(cm));
  }
  parse_generation_fields(j, r);
  return r;
}

void parse_generation_fields(const json& j, ChatRequest& r) {
  refuse_unsupported(j);
  const json* mt = json_field(j, "max_completion_tokens");
  if (!mt) mt = json_field(j, "max_tokens");
  if (mt) {
    r.max_tokens = integer(*mt, "max_tokens");
    if (*r.max_tokens < 1) throw bad_request("invalid_value", "'max_tokens' must be at least 1, got " + std::to_string(*r.max_tokens));
  }
  if (const json* t = json_field(j, "temperature")) {
    double v = number(*t, "temperature");
    if (v < 0 || v > 2) throw bad_request("invalid_value", "'temperature' must be between 0 and 2");
    r.temperature = static_cast<float>(v);
  }
  if (const json* t = json_field(j, "top_p")) {
    double v = number(*t, "top_p");
    if (!(v > 0) || v > 1) throw bad_request("invalid_value", "'top_p' must be in (0, 1]");
    // A positive double below float's range (1e-50) would become 0, which the sampler refuses;
    // any tiny top_p means "the most likely token only", which the smallest float says too.
    r.top_p = std::max(static_cast<float>(v), std::numeric_limits<float>::min());
  }
  if (const json* s = json_field(j, "seed")) r.seed = static_cast<uint64_t>(integer(*s, "seed"));
  if (const json* s = json_field(j, "stream")) {
    if (!s->is_boolean()) throw bad_request("invalid_type", "'stream' must be true or false");
    r.stream = s->get<bool>();
  }
  if (const json* s = json_field(j, "stream_options")) {
    if (!s->is_object()) throw bad_request("invalid_type", "'stream_options' must be an object");
    if (const json* u = json_field(*s, "include_usage")) {
      if (!u->is_boolean()) throw bad_request("invalid_type", "'stream_options.include_usage' must be true or false");
      r.include_usage = u->get<bool>();
    }
  }
  read_logprobs(j, r);
  if (const json* n = json_field(j, "n")) {
    const int64_t k = integer(*n, "n");
    if (k < 1 || k > 16) throw bad_request("invalid_value", "'n' must be between 1 and 16, got " + std::to_string(k));
    r.n = static_cast<int>(k);
  }
  if (const json* s = json_field(j, "stop")) {
    // A string, or an array of up to 4 (OpenAI's limit); null is no stop.
    const json list = s->is_string() ? json::array({*s}) : *s;
    if (!list.is_array() || list.size() > 4)
      throw bad_request("invalid_type", "'stop' must be a string or an array of up to 4 strings");
    for (const json& x : list) {
      if (!x.is_string() || x.get<std::string>().empty())
        throw bad_request("invalid_value", "'stop' must hold non-empty strings");
      r.stop.push_back(x.get<std::string>());
    }
  }
  if (const json* s = json_field(j, "return_token_ids")) {
    if (!s->is_boolean()) throw bad_request("invalid_type", "'return_token_ids' must be true or false");
    r.return_token_ids = s->get<bool>();
  }
  if (const json* s = json_field(j, "ignore_eos")) {
    if (!s->is_boolean()) throw bad_request("invalid_type", "'ignore_eos' must be true or false");
    r.ignore_eos = s->get<bool>();
  }
}

std::string chat_prompt_text(const std::vector<ChatMessage>& messages) {
  std::string s;
  for (const ChatMessage& m : messages) s += "<|" + m.role + "|>\n" + m.content + "\n";
  s += "<|assistant|>\n";
  return s;
}

}  // namespace folio
