#include "io/json_object_stream.h"

#include "core/error.h"

namespace folio {

namespace {

// The array's elements sit two levels in (object, array): dump(2)'s indent there is 4 spaces on
// every line. Strings never span lines (a newline in one is written "\n").
std::string indented(const std::string& dumped) {
  std::string out = "    ";
  out.reserve(dumped.size() + dumped.size() / 8);
  for (char c : dumped) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

void check_keys(const nlohmann::json& members, const std::string& key, bool before) {
  if (members.is_null()) return;  // no members
  if (!members.is_object()) throw Error(Error::Kind::Internal, "JsonObjectStream: members must be an object");
  for (const auto& [k, v] : members.items())
    if (before ? !(k < key) : !(key < k))
      throw Error(Error::Kind::Internal, "JsonObjectStream: member \"" + k + "\" does not sort " +
                                             (before ? "before" : "after") + " \"" + key + "\"");
}

}  // namespace

// The members with the array, empty, among them: what surrounds its elements in the whole dump.
std::string JsonObjectStream::dump_with_empty_array(const nlohmann::json& members) const {
  nlohmann::json skeleton = members;
  skeleton[key_] = nlohmann::json::array();
  return skeleton.dump(2);
}

void JsonObjectStream::begin(const nlohmann::json& before) {
  if (state_ != State::Fresh) throw Error(Error::Kind::Internal, "JsonObjectStream: begin() twice");
  check_keys(before, key_, true);
  const std::string text = dump_with_empty_array(before);  // ... "KEY": []\n}
  write_(std::string_view(text).substr(0, text.size() - 3));  // up to and with the '['
  state_ = State::InArray;
}

void JsonObjectStream::element(const nlohmann::json& e) {
  if (state_ != State::InArray) throw Error(Error::Kind::Internal, "JsonObjectStream: element() outside begin() and end()");
  const std::string text = (elements_ > 0 ? ",\n" : "\n") + indented(e.dump(2));
  write_(text);
  ++elements_;
}

void JsonObjectStream::end(const nlohmann::json& after) {
  if (state_ != State::InArray) throw Error(Error::Kind::Internal, "JsonObjectStream: end() without begin() or twice");
  check_keys(after, key_, false);
  const std::string text = dump_with_empty_array(after);  // {\n  "KEY": [] then the rest
  const size_t head = 4 + nlohmann::json(key_).dump().size() + 4;
  write_((elements_ > 0 ? "\n  ]" : "]") + text.substr(head));
  state_ = State::Ended;
}

}  // namespace folio
