// Runs the folio binary under test (FOLIO_BINARY) the way a user does, through the shell.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace folio::test {

struct FolioRun {
  int code = -1;    // exit status (-1: killed by a signal)
  std::string out;  // stdout
  std::string err;  // stderr
};

// `folio ARGS` with stderr captured in scratch/stderr.txt; `env` ("A=1 B=2") is prepended via env(1).
inline FolioRun run_folio(const std::string& args, const std::filesystem::path& scratch, const std::string& env = "") {
  std::filesystem::create_directories(scratch);
  const std::filesystem::path err = scratch / "stderr.txt";
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(FOLIO_BINARY) + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  FolioRun r;
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream e;
  e << std::ifstream(err).rdbuf();
  r.err = e.str();
  return r;
}

}  // namespace folio::test
