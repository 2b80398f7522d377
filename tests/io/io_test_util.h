// Helpers shared by the io tests: a self-deleting temp directory and raw file helpers.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace folio::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("folio-io-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // How many files and folders the directory holds (a test's check that no temporary is left).
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Runs fn, expects folio::Error(InvalidInput), and returns its message ("" if none was thrown).
template <typename Fn>
std::string invalid_input_message(Fn&& fn) {
  try {
    fn();
  } catch (const folio::Error& e) {
    EXPECT_EQ(e.kind(), folio::Error::Kind::InvalidInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected folio::Error(InvalidInput), nothing was thrown";
  return "";
}

// Random byte corruption in the header must give a folio::Error or a valid file, never a crash or
// another exception (run under ASan to also catch out-of-bounds reads).
template <typename Open>
void fuzz_header(const std::string& raw, size_t header_bytes, const std::string& path, Open open) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 400; ++iter) {
    std::string bad = raw;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < flips; ++i) {
      size_t pos = rng() % header_bytes;
      bad[pos] = static_cast<char>(rng() % 4 == 0 ? 0xff : rng());
    }
    write_bytes(path, bad);
    try {
      open(path);
    } catch (const folio::Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": unexpected exception " << e.what();
    }
  }
}

inline std::string fixture_path(const std::string& name) {
  return std::string(FOLIO_SOURCE_DIR) + "/tests/fixtures/io/" + name;
}

}  // namespace folio::testing

// Expects `haystack` (a std::string) to contain `needle`; prints both otherwise.
#define EXPECT_CONTAINS(haystack, needle)                                                          \
  do {                                                                                             \
    const std::string folio_h_ = (haystack);                                                       \
    const std::string folio_n_ = (needle);                                                         \
    EXPECT_NE(folio_h_.find(folio_n_), std::string::npos) << "'" << folio_h_ << "' lacks '" << folio_n_ << "'"; \
  } while (0)
