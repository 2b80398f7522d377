#include "kv/file_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace folio {
namespace {

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

}  // namespace

FileTier::FileTier(const std::filesystem::path& directory, size_t capacity_bytes, size_t grow_chunk_bytes)
    : capacity_(capacity_bytes) {
  if (capacity_bytes == 0) throw_invalid("KV file tier in " + directory.string() + " needs a byte budget > 0");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  chunk_ = round_up(std::max<size_t>(grow_chunk_bytes, 1), page);
  std::string templ = (directory / "folio-kv-XXXXXX").string();
  fd_ = mkstemp(templ.data());
  if (fd_ < 0)
    throw Error(Error::Kind::Io, "cannot create the KV cold tier file in " + directory.string() + ": " +
                                     std::strerror(errno));
  path_ = templ;
  // Unlinked right away: the open descriptor keeps the file alive, nothing is left behind.
  ::unlink(templ.c_str());
  // Map the whole budget once; pages past the file's current end are never touched.
  map_len_ = round_up(capacity_, page);
  void* p = ::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    ::close(fd_);
    throw Error(Error::Kind::Io, "cannot map " + std::to_string(map_len_) + " bytes of the KV cold tier file " +
                                     path_.string() + ": " + std::strerror(err));
  }
  base_ = static_cast<uint8_t*>(p);
}

FileTier::~FileTier() {
  ::munmap(base_, map_len_);
  ::close(fd_);
}

bool FileTier::can_put(size_t bytes) const {
  const size_t cls = size_class(bytes);
  return free_by_size_.lower_bound({cls, 0}) != free_by_size_.end() || end_ + cls <= capacity_;
}

const FileTier::Slot& FileTier::find(const BlockKey& key) const {
  auto it = blocks_.find(key);
  if (it == blocks_.end()) throw_missing(key);
  return it->second;
}

size_t FileTier::size_of(const BlockKey& key) const { return find(key).size; }

void FileTier::grow_to(size_t needed_end) {
  if (needed_end <= file_len_) return;
  const size_t new_len = std::min(capacity_, round_up(needed_end, chunk_));
  int rc = ::posix_fallocate(fd_, static_cast<off_t>(file_len_), static_cast<off_t>(new_len - file_len_));
  if (rc != 0) {
    // A partial extension may remain on disk; harmless, since nothing past file_len_ is ever touched
    // and the next growth starts from file_len_ again.
    const std::string what = "cannot grow the KV cold tier file " + path_.string() + " from " +
                             std::to_string(file_len_) + " to " + std::to_string(new_len) + " bytes: " +
                             std::strerror(rc);
    if (rc == ENOSPC || rc == EFBIG || rc == EDQUOT) throw Error(Error::Kind::OutOfMemory, what + " (disk full)");
    throw Error(Error::Kind::Io, what);
  }
  file_len_ = new_len;
}

size_t FileTier::allocate_slot(size_t cls) {
  auto best = free_by_size_.lower_bound({cls, 0});  // smallest free region that holds cls
  if (best != free_by_size_.end()) {
    const auto [len, off] = *best;
    free_by_size_.erase(best);
    free_by_offset_.erase(off);
    if (len > cls) {
      free_by_offset_.emplace(off + cls, len - cls);
      free_by_size_.emplace(len - cls, off + cls);
    }
    return off;
  }
  if (end_ + cls > capacity_)
    throw Error(Error::Kind::OutOfMemory, "KV cold tier file " + path_.string() + " full: " + std::to_string(end_) +
                                              " of its " + std::to_string(capacity_) + " byte budget used, " +
                                              std::to_string(cls) + " more needed");
  grow_to(end_ + cls);
  size_t off = end_;
  end_ += cls;
  return off;
}

void FileTier::put(const BlockKey& key, std::span<const uint8_t> bytes) {
  if (bytes.empty()) throw Error(Error::Kind::Internal, "KV file tier: empty block " + to_string(key));
  const size_t cls = size_class(bytes.size());
  auto it = blocks_.find(key);
  if (it != blocks_.end() && size_class(it->second.size) == cls) {
    std::memcpy(base_ + it->second.offset, bytes.data(), bytes.size());
    bytes_ = bytes_ - it->second.size + bytes.size();
    it->second.size = bytes.size();
    return;
  }
  const size_t off = allocate_slot(cls);  // may throw; nothing changed yet
  std::memcpy(base_ + off, bytes.data(), bytes.size());
  if (it != blocks_.end()) {
    free_slot(it->second.offset, size_class(it->second.size));
    bytes_ -= it->second.size;
    it->second = Slot{off, bytes.size()};
  } else {
    blocks_.emplace(key, Slot{off, bytes.size()});
  }
  bytes_ += bytes.size();
}

void FileTier::get(const BlockKey& key, std::span<uint8_t> out) const {
  const Slot& s = find(key);
  check_get_size(key, s.size, out.size());
  std::memcpy(out.data(), base_ + s.offset, s.size);
}

const uint8_t* FileTier::view(const BlockKey& key) const { return base_ + find(key).offset; }

void FileTier::erase(const BlockKey& key) {
  auto it = blocks_.find(key);
  if (it == blocks_.end()) throw_missing(key);
  free_slot(it->second.offset, size_class(it->second.size));
  bytes_ -= it->second.size;
  blocks_.erase(it);
}

void FileTier::free_slot(size_t offset, size_t cls) {
  size_t len = cls;
  // Merge with the free region after it, then with the one before it.
  auto next = free_by_offset_.find(offset + len);
  if (next != free_by_offset_.end()) {
    len += next->second;
    free_by_size_.erase({next->second, next->first});
    free_by_offset_.erase(next);
  }
  auto prev = free_by_offset_.lower_bound(offset);
  if (prev != free_by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      len += prev->second;
      free_by_size_.erase({prev->second, prev->first});
      free_by_offset_.erase(prev);
    }
  }
  if (offset + len == end_) {
    end_ = offset;  // free space at the end is simply the end again
    return;
  }
  free_by_offset_.emplace(offset, len);
  free_by_size_.emplace(len, offset);
}

}  // namespace folio
