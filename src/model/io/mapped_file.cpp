#include "model/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace folio {

namespace {

// Closes the descriptor on every path out of open(); the mapping survives the close.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_invalid("cannot open '" + path + "': " + std::strerror(errno));
  FdGuard guard{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_invalid("cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw_invalid("'" + path + "' is not a regular file");

  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw_invalid("cannot map '" + path + "': " + std::strerror(errno));
    data = static_cast<const uint8_t*>(p);
    // No access hint here: MADV_SEQUENTIAL would let the kernel drop weight pages right after use
    // (they are re-read every token), and MADV_WILLNEED would pull in a whole multi-GB file when a
    // caller only wants its tokenizer. Loaders that want everything call prefetch().
  }
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::MappedFile(std::string path, const uint8_t* data, size_t size)
    : path_(std::move(path)), data_(data), size_(size) {}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
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
