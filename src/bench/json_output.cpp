#include "bench/json_output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace folio {

namespace {

[[noreturn]] void cannot_write(const std::string& path, int err) {
  throw Error(Error::Kind::Io, "--json: cannot write '" + path + "'" + (err ? std::string(": ") + std::strerror(err) : ""));
}

}  // namespace

JsonOutput::JsonOutput(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw_invalid("--json FILE is required");
  std::error_code ec;
  const bool existed = std::filesystem::exists(path_, ec);
  errno = 0;
  std::ofstream probe(path_, std::ios::app);
  if (!probe) cannot_write(path_, errno);
  probe.close();
  if (!existed) std::filesystem::remove(path_, ec);
}

void JsonOutput::write(const nlohmann::json& j) const {
  errno = 0;
  std::ofstream out(path_, std::ios::trunc);
  if (!out) cannot_write(path_, errno);
  out << j.dump(2) << "\n";
  out.flush();
  if (!out) cannot_write(path_, errno);
}

}  // namespace folio
