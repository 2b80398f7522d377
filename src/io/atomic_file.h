// AtomicFileWriter: writes PATH.tmp and renames it over PATH only when everything was written, so a
// failed or interrupted write never leaves a half-written checkpoint under the real name.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace folio {

class AtomicFileWriter {
 public:
  // Throws Error(Io) "cannot write 'PATH': cannot create PATH.tmp: <reason>".
  explicit AtomicFileWriter(std::string path);
  // Removes PATH.tmp unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends n bytes; a failure is remembered and reported by commit().
  void write(const void* data, size_t n);
  // n zero bytes (alignment padding).
  void write_zeros(size_t n);
  // Closes and renames; throws Error(Io) naming PATH if any write, the close or the rename failed.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what);

  std::string path_, tmp_;
  std::FILE* fp_ = nullptr;
  bool ok_ = true;
  bool committed_ = false;
};

}  // namespace folio
