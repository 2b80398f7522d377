#include "bench/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <string_view>

extern char** environ;

namespace folio::cli {

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  ProcessResult r;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::ofstream(log_path, std::ios::app) << "cannot start " << argv[0] << "\n";
    return r;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)  // posix_spawnp's child could not exec
    std::ofstream(log_path, std::ios::app) << "cannot start " << argv[0] << "\n";
  return r;
}

std::string last_error_line(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    // A progress line rewritten with \r keeps only its last state.
    if (const size_t cr = line.rfind('\r'); cr != std::string::npos) line = line.substr(cr + 1);
    if (!line.empty()) last = line;
  }
  for (const char* prefix : {"folio: error: ", "folio: internal error: "})
    if (last.rfind(prefix, 0) == 0) return last.substr(std::char_traits<char>::length(prefix));
  return last.empty() ? "no output" : last;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty();
    for (char c : a)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./=,:+-").find(c) != std::string_view::npos)) plain = false;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace folio::cli
