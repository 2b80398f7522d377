// KVPolicy: which past tokens a sequence keeps in its cache, and which of them a query reads.
//
//   full     every token stays; the cache grows with the output.
//   rswa     Reference Sliding Window Attention: the reference (the whole first prefill) stays pinned
//            and fully visible; of the generated tokens only the last `window` (the current one and
//            window-1 before it) are kept, in a ring. The cache stops growing once the ring is full.
//   sparse   rswa's cache, but a generated token reads only part of the reference: the reference is
//            cut into units of at most `unit_tokens` tokens aligned to its segments (pages); each
//            unit keeps per-channel key minima and maxima, and each layer and KV head reads the
//            `top_k` units whose bound on q.k is largest (Quest), plus the first and last unit of
//            the reference, plus the window. Work per token is flat in the page count. When the
//            model writes page separators (DecodingOptions::page_separator), the `focus_pages`
//            pages from the one the decoder is on are read whole as well: reading a page needs all
//            of it, and a bound on q.k alone misses rows (measured on the mini model).
//   rolling  rswa's window, but the reference is a queue of segments (pages): new segments may be
//            appended while generating and old ones dropped, so at most a few pages are resident.
//            Positions are kept, never re-based: a token keeps the position it was appended at, and
//            a later segment takes the next free positions (see SequenceKV).
//
// keep < 1 (rswa and sparse; --kv-keep) compresses the reference once it is prefilled, as SnapKV
// does: the last `observe` reference tokens (the prompt's tail) are an observation window whose
// attention scores every reference row per layer and KV head; each segment (page) keeps its best
// ceil(keep * length) rows per KV head (scores max-pooled over neighbours first), the others are
// dropped for good and their bytes go back to the pool. Segments holding observed tokens stay whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace folio {

class PolicyRules;

enum class KVPolicyKind { Full, RSwa, Sparse, Rolling };

struct KVPolicy {
  KVPolicyKind kind = KVPolicyKind::RSwa;
  int64_t window = 128;
  int64_t top_k = 8;          // sparse: reference units read per layer and KV head
  int64_t unit_tokens = 64;   // sparse: most tokens of one unit
  int64_t focus_pages = 1;    // sparse: pages read whole from the one being read (0 = none)
  int64_t neighbour_pages = -1;  // sparse: top-k units only from the pages within this many of the one being read (-1 = any page)
  int64_t resident_pages = 4; // rolling: most reference segments kept (the pipeline enforces it)
  double keep = 1.0;          // fraction of each reference segment's rows kept per KV head (1 = all)
  int64_t observe = 32;       // keep < 1: reference tokens whose queries score the reference

  // Parses "full", "rswa" (also "reference_sliding_window"), "sparse" or "rolling"; rejects unknown
  // names and window < 1.
  static KVPolicy parse(std::string_view name, int64_t window);
  std::string name() const;
  // What the kind means for the cache (kv/policy_rules.h: one object per kind).
  const PolicyRules& rules() const;
  // Shorthands for the rules the code around the cache asks most.
  bool windowed() const;
  bool rolls() const;
  bool focuses_pages() const;
  bool reference_reusable() const;
  bool compresses_reference() const { return keep < 1.0; }
  size_t automatic_pages_per_pass(size_t document_pages, size_t model_max, size_t default_max) const;
};

}  // namespace folio
