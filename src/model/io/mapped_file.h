// MappedFile: a whole file mapped read-only into memory for as long as anyone holds it.
//
// Checkpoints are used in place, never copied: tensor views point straight into the mapping, so
// the loader that hands them out keeps the MappedFile alive (shared_ptr) as long as the views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace folio {

class MappedFile {
 public:
  // Maps the file at `path`. A missing, unreadable or non-regular file throws Error(InvalidInput)
  // naming the path. An empty file maps to data() == nullptr, size() == 0.
  static std::shared_ptr<MappedFile> open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Hints that [offset, offset + length) will be read soon (asynchronous read-ahead). Purely
  // advisory: out-of-range parts are clipped and failures are ignored.
  void prefetch(size_t offset, size_t length) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size);

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace folio
