// Content hashes for reference reuse: SHA-256 (OpenSSL) of bytes, as lowercase hex.
//
// Why SHA-256 and not a fast non-cryptographic hash: a cache key collision would hand one client's
// document to another, and clients choose the bytes, so the hash must resist chosen collisions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace folio {

// Incremental hashing; hex() ends it (further update() calls start nothing new: make another).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  // A field of a composite key: its length first, so ("ab", "c") and ("a", "bc") differ.
  Sha256& field(std::string_view bytes);
  std::string hex();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace folio
