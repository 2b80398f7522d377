// MappedFile: a whole file's bytes, read-only in memory for as long as anyone holds it.
//
// Checkpoints are used in place: tensor views point straight into these bytes, so the loader that
// hands them out keeps the MappedFile alive (shared_ptr) as long as the views. The bytes are held
// one of two ways (Residency): the file mapped, or the file read into anonymous memory backed by
// transparent huge pages. Decode streams every active weight once per token, and with 4 KiB pages
// of a mapped file that is a TLB miss every 4 KiB, and decode measured faster with the weights
// resident (docs/measurements.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace folio {

// How a file's bytes are held.
enum class Residency {
  // mmap of the file: opens at once, reads pages on first touch, shares them with the page cache
  // and other processes. Mapped at a 2 MiB boundary and advised for huge pages, so where the page
  // cache holds the file in 2 MiB folios (ext4 on recent kernels reads it so on such faults) they
  // are mapped whole; otherwise 4 KiB pages.
  kMapped,
  // Read whole at open into private anonymous memory aligned to 2 MiB and advised for transparent
  // huge pages (the kernel's THP setting decides whether it gets them) for as long as they come
  // cheaply (see read_whole in the .cpp), then made read-only. Costs the read at open (about 1 s per
  // 5 GB from the page cache) and memory of its own besides the page cache's evictable copy. A file
  // larger than half of the memory the kernel reports available (MemAvailable) is mapped instead:
  // residency() says which it got.
  kResident,
};

class MappedFile {
 public:
  // Opens the file at `path` with the given residency. A missing, unreadable or non-regular file,
  // a read error, or a file that shrinks while it is read throws Error(InvalidInput) naming the
  // path; memory that cannot be had throws it too. An empty file gives data() == nullptr,
  // size() == 0. Nothing beyond the file's end is ever readable through data().
  static std::shared_ptr<MappedFile> open(const std::string& path, Residency residency = Residency::kMapped);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  Residency residency() const { return residency_; }

  // For a kResident file only: runs edit(bytes) with the bytes writable for the call, read-only
  // again after (a loader rearranging its tensors in place, before any view is handed out). A
  // mapped file's pages are the page cache's, shared with other processes: nothing is run and
  // false is returned, as for an empty file. Throws Error(Internal) if the protection cannot change.
  bool edit_resident(const std::function<void(uint8_t* bytes)>& edit);

  // Hints that [offset, offset + length) will be read soon (asynchronous read-ahead). Purely
  // advisory: out-of-range parts are clipped and failures are ignored.
  void prefetch(size_t offset, size_t length) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size, size_t map_length, Residency residency);

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t map_length_ = 0;  // what munmap releases from data_: size_, or the resident copy's whole huge pages
  Residency residency_ = Residency::kMapped;
};

}  // namespace folio
