#include "core/content_hash.h"

#include <openssl/evp.h>

#include "core/error.h"

namespace folio {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) throw Error(Error::Kind::Internal, "SHA-256: OpenSSL init failed");
}

Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) != 1) throw Error(Error::Kind::Internal, "SHA-256: OpenSSL update failed");
  return *this;
}

Sha256& Sha256::field(std::string_view bytes) {
  const std::string len = std::to_string(bytes.size()) + ":";
  return update(len).update(bytes);
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_->md, digest, &n) != 1) throw Error(Error::Kind::Internal, "SHA-256: OpenSSL final failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex(); }

}  // namespace folio
