// Reading a JSON file (config.json and friends) with errors that name the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace folio {

// Throws InvalidInput "cannot open PATH" or "PATH: invalid JSON: ...".
nlohmann::json read_json_file(const std::string& path);

}  // namespace folio
