// FileTier: KV blocks in a memory-mapped file of ours under a byte budget (the cold tier).
//
// The file is created with a unique name (folio-kv-XXXXXX) in the given directory and unlinked at
// once, so it never outlives the process, not even a crash; its disk space returns when the tier is
// destroyed. The whole budget is mapped once at construction (address space only), so view()
// pointers never move; the file itself grows in chunks as blocks arrive, each growth allocated on
// disk up front (posix_fallocate) so that a full disk is an error here and not a SIGBUS later.
//
// Blocks live in slots at 64-byte aligned offsets, a block's slot being its size rounded up to 64
// bytes (its size class). Free space is kept by offset and by size: a new block takes the smallest
// free slot that holds it (a slot of its own class first, which is the usual case since KV blocks
// come in a few fixed sizes; else a larger one, split), or else space at the end of the file. An
// erased slot merges with free neighbours, and free space at the end goes back to the end. Live
// slots never move. The file never shrinks: its disk space stays allocated, so a reused slot cannot
// meet a full disk. footprint_bytes() is the file length.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "kv/kv_tier.h"

namespace folio {

class FileTier final : public KVTier {
 public:
  static constexpr size_t kDefaultGrowChunk = size_t{64} << 20;

  // capacity_bytes > 0 (the most the file may grow to); grow_chunk_bytes is rounded up to whole
  // pages. Error(Io) naming the directory if the file cannot be created or mapped.
  FileTier(const std::filesystem::path& directory, size_t capacity_bytes, size_t grow_chunk_bytes = kDefaultGrowChunk);
  ~FileTier() override;
  FileTier(const FileTier&) = delete;
  FileTier& operator=(const FileTier&) = delete;

  // The path the file had (it is unlinked already).
  const std::filesystem::path& path() const { return path_; }
  size_t file_bytes() const { return file_len_; }

  std::string name() const override { return "file"; }
  std::string location() const override { return path_.string(); }
  size_t capacity_bytes() const override { return capacity_; }
  size_t bytes_in_use() const override { return bytes_; }
  size_t footprint_bytes() const override { return file_len_; }
  size_t block_count() const override { return blocks_.size(); }
  bool addressable() const override { return true; }

  bool can_put(size_t bytes) const override;
  bool contains(const BlockKey& key) const override { return blocks_.count(key) != 0; }
  size_t size_of(const BlockKey& key) const override;

  // Throws Error(OutOfMemory) naming the path when the budget or the disk is exhausted, Error(Io)
  // on any other failure to grow the file.
  void put(const BlockKey& key, std::span<const uint8_t> bytes) override;
  void get(const BlockKey& key, std::span<uint8_t> out) const override;
  const uint8_t* view(const BlockKey& key) const override;
  void erase(const BlockKey& key) override;

 private:
  struct Slot {
    size_t offset = 0;
    size_t size = 0;  // block bytes (the slot is size_class(size))
  };
  static size_t size_class(size_t bytes) { return (bytes + 63) / 64 * 64; }
  const Slot& find(const BlockKey& key) const;
  size_t allocate_slot(size_t cls);  // an offset for a slot of class cls; may grow the file
  void free_slot(size_t offset, size_t cls);
  void grow_to(size_t needed_end);

  std::filesystem::path path_;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t map_len_ = 0;
  size_t capacity_;
  size_t chunk_;
  size_t file_len_ = 0;   // bytes allocated on disk and valid to touch through the mapping
  size_t end_ = 0;        // slots are carved from [0, end_)
  size_t bytes_ = 0;
  std::unordered_map<BlockKey, Slot, BlockKeyHash> blocks_;
  std::map<size_t, size_t> free_by_offset_;          // offset -> length of a free region in [0, end_)
  std::set<std::pair<size_t, size_t>> free_by_size_;  // (length, offset) of the same regions
};

}  // namespace folio
