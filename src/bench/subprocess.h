// Runs another program (no shell) with its stdout and stderr going to one log file, and waits.
#pragma once

#include <string>
#include <vector>

namespace folio::cli {

struct ProcessResult {
  int exit_code = -1;  // -1: could not start, or killed by a signal
  double wall_s = 0;
};

// argv[0] is looked up in PATH when it has no '/'. The log file is created (truncated).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& log_path);

// The last non-empty line of a log, without a leading "folio: error: " (a failed run's reason).
std::string last_error_line(const std::string& log_path);

// argv as one shell-ready line: words with characters other than [A-Za-z0-9_./=,:+-] single-quoted.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace folio::cli
