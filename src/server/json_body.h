// The JSON plumbing every request parser shares: the body as an object, optional fields, the model.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace folio {

// The field `name` of object j, or nullptr when absent or null.
inline const nlohmann::json* json_field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// The body parsed as a JSON object; 400 invalid_json otherwise (bad syntax, a number out of range).
inline nlohmann::json parse_json_object(std::string_view body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    // parse_error for bad syntax, and out_of_range (406) for a number beyond double's range such
    // as 1e400, which nlohmann reports while parsing: both are bodies the client must fix.
    throw bad_request("invalid_json", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw bad_request("invalid_json", "the body must be a JSON object");
  return j;
}

// The optional "model" field ("" when absent); 400 invalid_type when not a string.
inline std::string json_model_field(const nlohmann::json& j) {
  const nlohmann::json* m = json_field(j, "model");
  if (!m) return "";
  if (!m->is_string()) throw bad_request("invalid_type", "'model' must be a string");
  return m->get<std::string>();
}

}  // namespace folio
