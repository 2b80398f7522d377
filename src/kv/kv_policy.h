// KVPolicy: which past tokens a sequence keeps in its cache.
//
//   full  every token stays; the cache grows with the output.
//   rswa  Reference Sliding Window Attention: the reference (the whole first prefill) stays pinned
//         and fully visible; of the generated tokens only the last `window` (the current one and
//         window-1 before it) are kept, in a ring. The cache stops growing once the ring is full.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace folio {

enum class KVPolicyKind { Full, RSwa };

struct KVPolicy {
  KVPolicyKind kind = KVPolicyKind::RSwa;
  int64_t window = 128;

  // Parses "full" or "rswa" (also "reference_sliding_window"); rejects unknown names and window < 1.
  static KVPolicy parse(std::string_view name, int64_t window);
  std::string name() const { return kind == KVPolicyKind::Full ? "full" : "rswa"; }
};

}  // namespace folio
