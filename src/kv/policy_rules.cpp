#include "kv/policy_rules.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace folio {

size_t PolicyRules::pages_per_pass(size_t, size_t model_max, size_t default_max) const { return std::min(default_max, model_max); }

void PolicyRules::validate(const KVPolicy& p) const {
  if (p.window < 1) throw_invalid("window must be at least 1, got " + std::to_string(p.window));
  if (!(p.keep > 0.0 && p.keep <= 1.0)) throw_invalid("KV keep fraction must be in (0, 1], got " + std::to_string(p.keep));
  if (p.observe < 1) throw_invalid("KV observation window must be at least 1 token, got " + std::to_string(p.observe));
  if (p.keep < 1.0 && !compressible_reference())
    throw_invalid("KV keep < 1 (reference compression) needs the rswa or sparse policy, not " + p.name());
}

namespace {

// Every token stays; the output extends the reference's last segment.
class FullRules final : public PolicyRules {
 public:
  bool windowed() const override { return false; }
};

// The reference pinned and read whole, generated tokens in a ring of W.
class RSwaRules final : public PolicyRules {
 public:
  bool windowed() const override { return true; }
  bool compressible_reference() const override { return true; }
};

// rswa's cache; a generated token reads the top units of the reference per layer and KV head, and
// the page it is on whole. Work per token is flat in the pages, so a pass takes all the model can.
class SparseRules final : public PolicyRules {
 public:
  bool windowed() const override { return true; }
  bool selects_units() const override { return true; }
  bool focuses_pages() const override { return true; }
  bool compressible_reference() const override { return true; }
  size_t pages_per_pass(size_t, size_t model_max, size_t) const override { return model_max; }
  void validate(const KVPolicy& p) const override {
    PolicyRules::validate(p);
    if (p.top_k < 1) throw_invalid("sparse top-k must be at least 1, got " + std::to_string(p.top_k));
    if (p.unit_tokens < 1) throw_invalid("sparse unit size must be at least 1, got " + std::to_string(p.unit_tokens));
  }
};

// rswa's window over a reference that is a queue of pages entering and leaving while the decoder
// writes: the whole document is one pass with a few pages resident, and its KV is not reusable.
class RollingRules final : public PolicyRules {
 public:
  bool windowed() const override { return true; }
  bool grows_reference_while_generating() const override { return true; }
  bool drops_segments() const override { return true; }
  bool reference_reusable() const override { return false; }
  size_t pages_per_pass(size_t document_pages, size_t, size_t) const override { return document_pages; }
};

}  // namespace

const PolicyRules& PolicyRules::of(KVPolicyKind kind) {
  static const FullRules full;
  static const RSwaRules rswa;
  static const SparseRules sparse;
  static const RollingRules rolling;
  switch (kind) {
    case KVPolicyKind::Full: return full;
    case KVPolicyKind::RSwa: return rswa;
    case KVPolicyKind::Sparse: return sparse;
    case KVPolicyKind::Rolling: return rolling;
  }
  return rswa;
}

}  // namespace folio
