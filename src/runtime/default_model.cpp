#include "runtime/default_model.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"

#ifndef FOLIO_SOURCE_ROOT
#define FOLIO_SOURCE_ROOT ""
#endif

namespace folio {

namespace {

// Candidate locations of a shipped path, in search order.
std::vector<std::filesystem::path> shipped_candidates(const std::string& relative) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / ".." / relative);
    out.push_back(exe.parent_path() / relative);
  }
  if (*FOLIO_SOURCE_ROOT) out.push_back(fs::path(FOLIO_SOURCE_ROOT) / relative);
  return out;
}

}  // namespace

std::string shipped_path(const std::string& relative) {
  namespace fs = std::filesystem;
  std::string looked;
  for (const fs::path& c : shipped_candidates(relative)) {
    if (fs::exists(c)) return fs::weakly_canonical(c).string();
    looked += (looked.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw_invalid("'" + relative + "' not found (looked in: " + looked + ")");
}

std::string default_ocr_model_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("FOLIO_MODEL"); env && *env) {
    if (!fs::exists(fs::path(env) / "config.json"))
      throw_invalid(std::string("FOLIO_MODEL='") + env + "' is not a model directory (no config.json)");
    return env;
  }
  const std::vector<fs::path> candidates = shipped_candidates(kDefaultOcrModel);
  std::string looked;
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "config.json")) return fs::weakly_canonical(c).string();
    looked += (looked.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw_invalid("no model given and the shipped model folio-mini-ocr-3 was not found (looked in: " + looked +
                "); pass --model DIR or set FOLIO_MODEL");
}

}  // namespace folio
