// What a benchmark report states about where it ran: CPU, cores, instruction set, memory, the
// source commit and the date. Read from the operating system, never assumed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace folio::cli {

// {"cpu": model name from /proc/cpuinfo, "cores": online CPUs, "isa": the kernels' instruction set,
//  "memory_bytes": MemTotal, "commit": `git rev-parse --short HEAD` in `source_dir` (with "+dirty"
//  when `git status --porcelain` lists changes to tracked files outside docs/) or "unknown",
//  "date": UTC ISO 8601}.
nlohmann::json describe_machine(const std::string& source_dir);

// The time now, UTC, ISO 8601 ("2026-11-29T23:40:00Z").
std::string utc_now();

}  // namespace folio::cli
