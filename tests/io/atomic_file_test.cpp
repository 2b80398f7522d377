// AtomicFileWriter: nothing under the destination's name until commit(), no temporary left behind
// whatever fails, errors that name the option, the path and the reason (a missing directory, a full
// device, a file-size limit standing in for a full disk), devices written in place, links kept.
#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io_test_util.h"

namespace folio {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_all(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path, std::ios::binary).rdbuf();
  return s.str();
}

// The message of the Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Io);
    return e.what();
  }
  return "";
}

TEST(AtomicFile, TheDestinationAppearsWholeOnCommitAndNoTemporaryStays) {
  TempDir dir;
  const std::string path = dir.file("out.md");
  AtomicFileWriter w(path, "--out");
  w.write("hello ");
  w.write(std::string_view("world\n"));
  EXPECT_FALSE(fs::exists(path)) << "nothing under the real name before commit";
  ASSERT_EQ(names_in(dir.path()).size(), 1u);
  EXPECT_EQ(names_in(dir.path())[0].rfind(".out.md.partial-", 0), 0u) << names_in(dir.path())[0];
  EXPECT_EQ(fs::path(w.temporary_path()).parent_path(), dir.path());  // the same file system
  w.commit();
  EXPECT_EQ(read_all(path), "hello world\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.md"});
}

TEST(AtomicFile, AbandonedWriterLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("out.json");
  std::ofstream(path) << "old";
  {
    AtomicFileWriter w(path, "--json");
    w.write("half of a new one");
    w.close();
  }  // not committed: an error elsewhere ended the run
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.json"});
}

TEST(AtomicFile, MissingDirectoryNamesTheOptionThePathAndTheReason) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/out.json");
  const std::string e = error_of([&] { AtomicFileWriter w(path, "--json"); });
  EXPECT_EQ(e.rfind("--json: cannot write '" + path + "'", 0), 0u) << e;
  EXPECT_NE(e.find("No such file or directory"), std::string::npos) << e;
  EXPECT_TRUE(names_in(dir.path()).empty());
}

// A device is written in place (there is nothing to rename onto); /dev/full fails as a full disk.
TEST(AtomicFile, FullDeviceReportsNoSpace) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string e = error_of([] {
    AtomicFileWriter w("/dev/full", "--json");
    w.write(std::string(1 << 16, 'x'));
    w.commit();
  });
  EXPECT_EQ(e.rfind("--json: cannot write '/dev/full': write failed: ", 0), 0u) << e;
  EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
}

// A regular file that cannot grow (RLIMIT_FSIZE, as a full disk would stop it): the write fails,
// the error says why, and neither the destination nor the temporary exists. Run in a child process
// (the limit holds for the whole process); exits 0 when all is as it should be.
[[noreturn]] void write_past_a_size_limit(const std::string& path, const fs::path& dir) {
  std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  const rlimit limit{4096, 4096};
  setrlimit(RLIMIT_FSIZE, &limit);
  const std::string e = error_of([&] {
    AtomicFileWriter w(path, "--out");
    for (int i = 0; i < 64; ++i) w.write(std::string(1024, 'x'));
    w.commit();
  });
  const bool ok = e.rfind("--out: cannot write '" + path + "'", 0) == 0 && e.find("File too large") != std::string::npos &&
                  names_in(dir).empty();
  if (!ok) std::fprintf(stderr, "message: %s; files left: %zu\n", e.c_str(), names_in(dir).size());
  std::exit(ok ? 0 : 1);
}

TEST(AtomicFileDeathTest, FileThatCannotGrowLeavesNothing) {
  TempDir dir;
  EXPECT_EXIT(write_past_a_size_limit(dir.file("big.md"), dir.path()), ::testing::ExitedWithCode(0), "");
}

TEST(AtomicFile, ALinkStaysALinkToTheNewFile) {
  TempDir dir;
  fs::create_directories(dir.path() / "real");
  const fs::path target = dir.path() / "real" / "out.md", link = dir.path() / "out.md";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  AtomicFileWriter w(link.string());
  w.write("new");
  w.commit();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_all(target.string()), "new");
  EXPECT_EQ(names_in(dir.path() / "real"), std::vector<std::string>{"out.md"});
}

}  // namespace
}  // namespace folio
