#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace folio {

namespace fs = std::filesystem;

AtomicFileWriter::AtomicFileWriter(std::string path, std::string label) : path_(std::move(path)), label_(std::move(label)) {
  std::error_code ec;
  // A link stays a link: the file it names is the one replaced.
  target_ = fs::is_symlink(path_, ec) ? fs::weakly_canonical(path_, ec).string() : path_;
  if (ec) target_ = path_;
  const fs::file_status st = fs::status(target_, ec);
  in_place_ = fs::exists(st) && !fs::is_regular_file(st);
  if (!in_place_) {
    open_temporary();
    return;
  }
  tmp_ = target_;
  fp_ = std::fopen(target_.c_str(), "wb");
  if (!fp_) fail("cannot open it", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fp_) std::fclose(fp_);
  if (!committed_ && !in_place_ && !tmp_.empty()) std::remove(tmp_.c_str());
}

// Exclusive creation under a name no other writer uses (pid and counter), retried past leftovers
// of a killed process with the same pid; open(2) rather than mkstemp so the umask sets the mode.
void AtomicFileWriter::open_temporary() {
  static std::atomic<unsigned> counter{0};
  const fs::path dest(target_);
  const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  for (int tries = 0;; ++tries) {
    std::string name = ".";
    name += dest.filename().string();
    name += ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    tmp_ = (dir / name).string();
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      fp_ = ::fdopen(fd, "wb");
      if (fp_) return;
      const int err = errno;
      ::close(fd);
      fail("cannot open " + tmp_, err);
    }
    const int err = errno;
    if (err != EEXIST || tries >= 100) {
      const std::string what = "cannot create " + tmp_;
      tmp_.clear();  // not ours: nothing to remove
      fail(what, err);
    }
  }
}

void AtomicFileWriter::write(const void* data, size_t n) {
  if (n == 0) return;
  if (!fp_) fail(closed_ ? "written after the close" : "written after a failure", EBADF);
  if (std::fwrite(data, 1, n, fp_) != n) fail("write failed", errno);
}

void AtomicFileWriter::write_zeros(size_t n) {
  static const char zeros[4096] = {};
  while (n > 0) {
    const size_t k = n < sizeof zeros ? n : sizeof zeros;
    write(zeros, k);
    n -= k;
  }
}

// stdio holds the last bytes until the close: a full disk often shows only here.
void AtomicFileWriter::close() {
  if (closed_) return;
  if (!fp_) fail("closed after a failure", EBADF);
  if (std::fflush(fp_) != 0) fail("write failed", errno);
  std::FILE* fp = std::exchange(fp_, nullptr);
  if (std::fclose(fp) != 0) fail("close failed", errno);
  closed_ = true;
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  close();
  if (!in_place_ && std::rename(tmp_.c_str(), target_.c_str()) != 0) fail("cannot rename " + tmp_ + " onto it", errno);
  committed_ = true;
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  if (fp_) std::fclose(std::exchange(fp_, nullptr));
  if (!in_place_ && !tmp_.empty()) std::remove(tmp_.c_str());
  tmp_.clear();
  throw Error(Error::Kind::Io, (label_.empty() ? "" : label_ + ": ") + "cannot write '" + path_ + "': " + what + ": " +
                                   std::strerror(err));
}

}  // namespace folio
