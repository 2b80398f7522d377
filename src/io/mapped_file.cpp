#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/memory_stats.h"

namespace folio {

namespace {

// Closes the descriptor on every path out of open(); the mapping survives the close.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Anonymous memory of `size` bytes whose start is 2 MiB-aligned, advised for huge pages. Returns
// its start and its length (whole huge pages), the region to unmap.
std::pair<void*, size_t> map_aligned_anonymous(const std::string& path, size_t size) {
  const size_t length = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  uint8_t* start = reserve_huge_aligned(length);
  if (!start || ::mprotect(start, length, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    if (start) ::munmap(start, length);
    throw_invalid("cannot allocate " + std::to_string(size) + " bytes to read '" + path + "' into: " + std::strerror(err));
  }
#ifdef MADV_HUGEPAGE
  ::madvise(start, length, MADV_HUGEPAGE);  // advisory: without THP the copy still works
#endif
  return {start, length};
}

// The file mapped read-only at a 2 MiB-aligned address and advised for huge pages. Where the
// filesystem keeps large folios (ext4 on recent kernels), the page cache then reads the file in 2 MiB
// folios on faults and maps them whole, so a mapped checkpoint gets the TLB reach of the resident
// copy without a copy; elsewhere the advice is ignored and this is a plain mapping. Folios the
// page cache already holds stay as they are (a file last read with read(2) maps in small pages).
const uint8_t* map_file_huge_aligned(int fd, const std::string& path, size_t size) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t length = (size + page - 1) / page * page;
  uint8_t* start = reserve_huge_aligned(length);
  if (!start || ::mmap(start, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    const int err = errno;
    if (start) ::munmap(start, length);
    throw_invalid("cannot map '" + path + "': " + std::strerror(err));
  }
#ifdef MADV_HUGEPAGE
  ::madvise(start, size, MADV_HUGEPAGE);  // advisory
#endif
  return start;
}

// Reads [done, done + want) of fd into dst + done; throws naming the path on an error or a short file.
void read_range(int fd, const std::string& path, uint8_t* dst, size_t done, size_t want, size_t size) {
  const size_t end = done + want;
  while (done < end) {
    const ssize_t got = ::pread(fd, dst + done, std::min<size_t>(end - done, size_t{1} << 30), static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_invalid("cannot read '" + path + "': " + std::strerror(errno));
    if (got == 0) throw_invalid("'" + path + "' ended at byte " + std::to_string(done) + " while being read (" + std::to_string(size) + " expected): it changed");
    done += static_cast<size_t>(got);
  }
}

// Reads all `size` bytes of fd into the huge-page region at dst (map_aligned_anonymous), `length`
// bytes long, 16 MiB at a time, each part's pages touched first: once a part's huge pages come
// slowly (core/huge_pages.h), the rest of the region is advised for small pages. Small parts keep
// the cost of the slow part that tells small.
void read_whole(int fd, const std::string& path, uint8_t* dst, size_t size, size_t length) {
  constexpr size_t kPart = size_t{16} << 20;
  bool huge = true;
  for (size_t done = 0; done < size; done += kPart) {
    const size_t want = std::min(kPart, size - done);
    if (huge && !touch_pages_quickly(dst + done, want) && done + kPart < length) {
      huge = false;
      advise_small_pages(dst + done + kPart, length - done - kPart);
    }
    read_range(fd, path, dst, done, want, size);
  }
}

}  // namespace

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path, Residency residency) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_invalid("cannot open '" + path + "': " + std::strerror(errno));
  FdGuard guard{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_invalid("cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw_invalid("'" + path + "' is not a regular file");

  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<MappedFile>(new MappedFile(path, nullptr, 0, 0, residency));
  // A copy larger than half of what is available could push the process into the OOM killer where
  // a mapping would only page: such a file stays mapped.
  if (residency == Residency::kResident && size > available_memory_bytes() / 2) residency = Residency::kMapped;
  if (residency == Residency::kResident) {
    auto [base, length] = map_aligned_anonymous(path, size);
    try {
      read_whole(fd, path, static_cast<uint8_t*>(base), size, length);
    } catch (...) {
      ::munmap(base, length);
      throw;
    }
    ::mprotect(base, length, PROT_READ);  // as read-only as a mapping; failure changes nothing we rely on
    return std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(base), size, length, residency));
  }
  const uint8_t* p = map_file_huge_aligned(fd, path, size);
  // No access hint here: MADV_SEQUENTIAL would let the kernel drop weight pages right after use
  // (they are re-read every token), and MADV_WILLNEED would pull in a whole multi-GB file when a
  // caller only wants its tokenizer. Loaders that want everything call prefetch().
  return std::shared_ptr<MappedFile>(new MappedFile(path, p, size, size, residency));
}

MappedFile::MappedFile(std::string path, const uint8_t* data, size_t size, size_t map_length, Residency residency)
    : path_(std::move(path)), data_(data), size_(size), map_length_(map_length), residency_(residency) {}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), map_length_);
}

bool MappedFile::edit_resident(const std::function<void(uint8_t* bytes)>& edit) {
  if (residency_ != Residency::kResident || !data_) return false;
  auto* bytes = const_cast<uint8_t*>(data_);
  if (::mprotect(bytes, map_length_, PROT_READ | PROT_WRITE) != 0)
    throw Error(Error::Kind::Internal, "cannot make '" + path_ + "' writable to rearrange it: " + std::strerror(errno));
  try {
    edit(bytes);
  } catch (...) {
    ::mprotect(bytes, map_length_, PROT_READ);
    throw;
  }
  ::mprotect(bytes, map_length_, PROT_READ);
  return true;
}

void MappedFile::prefetch(size_t offset, size_t length) const {
  if (!data_ || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  // madvise wants a page-aligned start.
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t start = offset / page * page;
  ::madvise(const_cast<uint8_t*>(data_) + start, length + (offset - start), MADV_WILLNEED);
}

}  // namespace folio
