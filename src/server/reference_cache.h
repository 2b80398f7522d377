// ReferenceCache: prepared OCR references reused across requests, least recently used first out,
// within a byte budget (inference.reference_cache_bytes).
//
// A key is a content hash (core/content_hash.h) of everything that decides a pass's reference: the model,
// the vision mode, the PDF DPI and, for each page of the pass, the SHA-256 of its file's bytes and
// its index in the file. The value is the pass as the model prepared it, with every embedding part
// already produced (rows, not lazy producers), so a hit skips rendering and encoding entirely.
//
// Promises: find() counts a hit when it finds the key; insert() counts a miss (a pass that had to be
// prepared) and keeps the entry only if it fits the budget alone, evicting least recently used entries until the total fits; bytes() is the sum of entries'
// sizes as given. Entries are shared: an evicted entry stays alive while a request still uses it.
// Values are immutable: a user copies the pass (its DecodingOptions::embed_token hook holds its
// state by value, so a copy of a never-called hook starts fresh). Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/ocr_model.h"

namespace folio {

struct CachedPass {
  OcrPass pass;                // embedding parts hold produced rows; a rolling pass has no next_page
  std::vector<ReferencePart> later_pages;  // rolling: the pages that enter as others leave, in order
  int64_t embedding_rows = 0;  // rows of its embedding parts (reported as cached prompt tokens)
  size_t bytes = 0;            // rows and ids held
};

// The bytes a prepared pass holds (ids and rows), for CachedPass::bytes.
size_t reference_bytes(const std::vector<ReferencePart>& reference, int64_t hidden);

struct ReferenceCacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  size_t bytes = 0, entries = 0, capacity = 0;
};

class ReferenceCache {
 public:
  explicit ReferenceCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  std::shared_ptr<const CachedPass> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const CachedPass> value);
  ReferenceCacheStats stats() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const CachedPass>>>;  // front = most recent
  mutable std::mutex mu_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
};

}  // namespace folio
