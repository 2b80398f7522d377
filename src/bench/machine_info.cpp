#include "bench/machine_info.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "kernels/cpu/cpu_features.h"
#include "bench/subprocess.h"

namespace folio::cli {

namespace {

// stdout of a shell command (git only; its absence or failure gives "").
std::string command_output(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return "";
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0)
      if (const size_t c = line.find(':'); c != std::string::npos) return line.substr(line.find_first_not_of(' ', c + 1));
  return "unknown";
}

size_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    size_t kb = 0;
    in >> kb;
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace

nlohmann::json describe_machine(const std::string& source_dir) {
  const std::string git = "git -C " + shell_join({source_dir}) + " ";
  std::string commit = command_output(git + "rev-parse --short HEAD 2>/dev/null");
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == ' ')) commit.pop_back();
  if (commit.empty()) commit = "unknown";
  // docs/ is left out: a report writes its own results there while it runs, which changes no code.
  else if (!command_output(git + "status --porcelain --untracked-files=no -- . ':!docs' 2>/dev/null").empty()) commit += "+dirty";
  return {{"cpu", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"isa", kernels::isa_name(kernels::best_isa())},
          {"memory_bytes", mem_total_bytes()},
          {"commit", commit},
          {"date", utc_now()}};
}

std::string utc_now() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

}  // namespace folio::cli
