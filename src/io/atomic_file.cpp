#include "io/atomic_file.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace folio {

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fp_ = std::fopen(tmp_.c_str(), "wb");
  if (!fp_) fail("cannot create " + tmp_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fp_) std::fclose(fp_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t n) {
  if (ok_ && n > 0) ok_ = std::fwrite(data, 1, n, fp_) == n;
}

void AtomicFileWriter::write_zeros(size_t n) {
  static const char zeros[4096] = {};
  while (ok_ && n > 0) {
    size_t k = n < sizeof zeros ? n : sizeof zeros;
    write(zeros, k);
    n -= k;
  }
}

void AtomicFileWriter::commit() {
  bool closed = std::fclose(fp_) == 0;
  fp_ = nullptr;
  if (!ok_ || !closed) fail("write failed");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename " + tmp_);
  committed_ = true;
}

void AtomicFileWriter::fail(const std::string& what) {
  int err = errno;
  if (fp_) {
    std::fclose(fp_);
    fp_ = nullptr;
  }
  std::remove(tmp_.c_str());
  throw Error(Error::Kind::Io, "cannot write '" + path_ + "': " + what + ": " + std::strerror(err));
}

}  // namespace folio
