// Token ids for the decoder tests' tiny models (vocabulary 256): n ids from `seed`, never 0 or 1
// (BOS and EOS), different seeds giving different runs.
#pragma once

#include <cstdint>
#include <vector>

namespace folio {

inline std::vector<int32_t> test_token_ids(int n, int seed) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back((seed * 31 + i * 17) % 250 + 2);
  return v;
}

}  // namespace folio
