// The --json file a benchmark writes when it ends, checked when it starts: a suite that runs for
// minutes must not find out only then that its result has nowhere to go.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace folio {

class JsonOutput {
 public:
  // Checks now that `path` can be written: opens it for appending (an existing file keeps its
  // contents until write()) and removes it again if it did not exist. Throws Error(Io) "--json:
  // cannot write 'PATH'" (with the system's reason) if it cannot be opened, e.g. its directory is
  // missing; InvalidInput "--json FILE is required" if path is empty.
  explicit JsonOutput(std::string path);

  // Writes j, indented, replacing the file. Throws Error(Io) as above if that fails.
  void write(const nlohmann::json& j) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace folio
