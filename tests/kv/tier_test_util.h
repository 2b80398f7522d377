// Helpers shared by the KV tier tests: a scratch directory, random blocks, open descriptors.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace folio::test {

// Runs f, expects a folio::Error of kind `want` and returns its message.
template <typename F>
std::string error_of(F&& f, Error::Kind want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(want)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no folio::Error thrown";
  return {};
}

// A fresh empty directory under the test temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = (std::filesystem::path(testing::TempDir()) / "folio-tier-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> random_block(std::mt19937_64& rng, size_t size) {
  std::vector<uint8_t> b(size);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// How many of this process's descriptors point at `path` (an unlinked file reads "path (deleted)").
inline size_t open_descriptors_to(const std::filesystem::path& path) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind(path.string(), 0) == 0) ++n;
  }
  return n;
}

}  // namespace folio::test
