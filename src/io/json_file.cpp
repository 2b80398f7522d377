#include "io/json_file.h"

#include <fstream>

#include "core/error.h"

namespace folio {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_invalid("cannot open " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw_invalid(path + ": invalid JSON: " + e.what());
  }
}

}  // namespace folio
