// JsonObjectStream: a JSON object written out as nlohmann::json::dump(2) writes it, byte for byte,
// with one member an array given one element at a time, so a long array (a document's pages) is
// never held whole.
//
// Promises:
//  - begin(before) writes "{", the members of `before` and the array's key and "["; element(e)
//    writes one element; end(after) closes the array and writes the members of `after` and "}".
//    The bytes are those of dump(2) of the object holding before's members, the array and after's
//    members (nlohmann::json sorts members by key, so every key of `before` must sort before the
//    array's key and every key of `after` after it: Error(Internal) otherwise, before any write);
//  - the calls go in that order, begin and end once each: Error(Internal) otherwise;
//  - an element that does not dump (invalid UTF-8) throws nlohmann's type_error and writes nothing
//    of it.
// What `write` throws goes through; the stream is then unusable. Not thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace folio {

class JsonObjectStream {
 public:
  using Write = std::function<void(std::string_view)>;
  JsonObjectStream(std::string array_key, Write write) : key_(std::move(array_key)), write_(std::move(write)) {}

  void begin(const nlohmann::json& before);
  void element(const nlohmann::json& e);
  void end(const nlohmann::json& after);

 private:
  enum class State { Fresh, InArray, Ended };
  std::string dump_with_empty_array(const nlohmann::json& members) const;

  std::string key_;
  Write write_;
  State state_ = State::Fresh;
  size_t elements_ = 0;
};

}  // namespace folio
