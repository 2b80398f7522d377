// AtomicFileWriter: a file written under a temporary name next to its destination and renamed onto
// it only when everything was written, so a failed or interrupted write never leaves a half-written
// file under the real name.
//
// Promises:
//  - the temporary is ".NAME.partial-PID-N" in the destination's directory (the same file system,
//    so the rename is atomic; hidden and named partial, so nobody takes it for the result), created
//    exclusively with mode 0666 less the umask, as an ordinary new file would be;
//  - a destination that exists and is not a regular file (/dev/stdout, /dev/full, a pipe) is
//    written in place: there is nothing to rename onto, and whoever reads it sees the bytes as
//    they come; a symbolic link is followed (the file it names is replaced, the link kept);
//  - every failure throws Error(Io) "LABEL: cannot write 'PATH': WHAT: REASON" (LABEL: and the
//    space only when a label is given, e.g. the command-line option that named the path; REASON
//    is strerror of the first failing call, e.g. "No space left on device"); the temporary is
//    removed first and the destination is left as it was;
//  - write() reports a failure at once (the file is closed and the temporary removed); bytes
//    buffered by stdio can fail only at commit(), which checks the close as well as the rename;
//  - the destructor removes the temporary unless commit() succeeded, whatever stopped the writer.
// Neither data nor metadata are synced to the disk (no fsync): a crash may lose a committed file,
// never leave a partial one under the real name. Not thread-safe; one writer per destination.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace folio {

class AtomicFileWriter {
 public:
  // Throws as above when the temporary (or the in-place destination) cannot be opened.
  explicit AtomicFileWriter(std::string path, std::string label = {});
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // n zero bytes (alignment padding).
  void write_zeros(size_t n);
  // Flushes and closes, so that every failure but the rename's shows now: a caller committing
  // several files closes them all before renaming any.
  void close();
  // Closes (unless close() did) and renames onto the destination.
  void commit();

  // Where the bytes go until commit(): the temporary, or the destination written in place.
  const std::string& temporary_path() const { return tmp_; }

 private:
  void open_temporary();
  [[noreturn]] void fail(const std::string& what, int err);

  std::string path_, label_, target_, tmp_;  // target_: path_ with a link resolved
  std::FILE* fp_ = nullptr;
  bool in_place_ = false;
  bool closed_ = false, committed_ = false;
};

}  // namespace folio
