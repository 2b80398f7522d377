// Helpers shared by the SequenceKV tests that compare two sequences: tokens whose K and V rows are
// a pure function of (layer, position), so two sequences can be given the same tokens, and the
// attention output of a fixed query over what each layer and head reads.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kv/sequence_kv.h"

namespace folio::test {

constexpr int64_t kFillLayers = 2, kFillHeads = 4, kFillHd = 32, kFillRow = kFillHeads * kFillHd;

inline void store_token(SequenceKV& kv, int64_t layer, int64_t pos) {
  std::mt19937 rng(static_cast<uint32_t>(pos * kFillLayers + layer + 1));
  std::normal_distribution<float> nd;
  std::vector<float> k(kFillRow), v(kFillRow);
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  kv.store(layer, pos, k.data(), v.data());
}

// A reference segment of n tokens (sparse units also starting at unit_offsets within it).
inline void append_segment(SequenceKV& kv, int64_t n, const std::vector<int64_t>& unit_offsets = {}) {
  kv.begin_segment();
  const int64_t first = kv.length();
  for (int64_t u : unit_offsets) kv.sparse().begin_unit(first + u);
  kv.append(n, true);
  for (int64_t l = 0; l < kFillLayers; ++l)
    for (int64_t p = first; p < first + n; ++p) store_token(kv, l, p);
}

inline void generate(SequenceKV& kv, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = kv.append(1, false);
    for (int64_t l = 0; l < kFillLayers; ++l) store_token(kv, l, pos);
  }
}

// Attention of a fixed query at `pos` over what each layer and KV head reads (a read scope per
// layer, as the decoder holds).
inline std::vector<float> attend_at(const SequenceKV& kv, int64_t pos) {
  std::mt19937 rng(77);
  std::normal_distribution<float> nd;
  std::vector<float> q(kFillRow), out(kFillLayers * kFillRow), scratch(8192);
  for (auto& x : q) x = nd(rng);
  for (int64_t l = 0; l < kFillLayers; ++l) {
    const SequenceKV::ReadScope reads(kv);
    for (int64_t h = 0; h < kFillHeads; ++h) {
      std::vector<kernels::KVSpan> spans;
      kv.query_spans(l, pos, h, q.data() + h * kFillHd, 1, spans);
      kernels::attend(q.data(), spans, {kFillHeads, kFillHeads, kFillHd, 1.f / std::sqrt(float(kFillHd))}, out.data() + l * kFillRow, h,
                      h + 1, scratch.data());
    }
  }
  return out;
}

}  // namespace folio::test
