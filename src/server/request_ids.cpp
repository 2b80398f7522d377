#include "server/request_ids.h"

#include <random>

namespace folio {

RequestIds::RequestIds() {
  std::random_device rd;
  const uint64_t bits = (uint64_t{rd()} << 32) ^ rd();
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < 12; ++i) instance_ += kHex[(bits >> (4 * i)) & 15];
}

std::string RequestIds::next(std::string_view kind) {
  return std::string(kind) + "-" + instance_ + "-" + std::to_string(++n_);
}

std::string RequestIds::for_request(std::string_view client_id) {
  const bool ok = !client_id.empty() && client_id.size() <= 128 && client_id.find_first_not_of(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == std::string_view::npos;
  return ok ? std::string(client_id) : next("req");
}

}  // namespace folio
