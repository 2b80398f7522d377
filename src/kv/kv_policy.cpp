#include "kv/kv_policy.h"

#include <algorithm>

#include "core/error.h"
#include "kv/policy_rules.h"

namespace folio {

KVPolicy KVPolicy::parse(std::string_view name, int64_t window) {
  KVPolicy p;
  if (name == "full") {
    p.kind = KVPolicyKind::Full;
  } else if (name == "rswa" || name == "reference_sliding_window") {
    p.kind = KVPolicyKind::RSwa;
  } else if (name == "sparse") {
    p.kind = KVPolicyKind::Sparse;
  } else if (name == "rolling") {
    p.kind = KVPolicyKind::Rolling;
  } else {
    throw_invalid("unknown KV policy '" + std::string(name) + "' (expected full, rswa, sparse or rolling)");
  }
  p.window = window;
  p.rules().validate(p);
  return p;
}

const PolicyRules& KVPolicy::rules() const { return PolicyRules::of(kind); }
bool KVPolicy::windowed() const { return rules().windowed(); }
bool KVPolicy::rolls() const { return rules().grows_reference_while_generating(); }
bool KVPolicy::focuses_pages() const { return rules().focuses_pages(); }
bool KVPolicy::reference_reusable() const { return rules().reference_reusable(); }
size_t KVPolicy::automatic_pages_per_pass(size_t document_pages, size_t model_max, size_t default_max) const {
  return rules().pages_per_pass(document_pages, model_max, default_max);
}

std::string KVPolicy::name() const {
  switch (kind) {
    case KVPolicyKind::Full: return "full";
    case KVPolicyKind::RSwa: return "rswa";
    case KVPolicyKind::Sparse: return "sparse";
    case KVPolicyKind::Rolling: return "rolling";
  }
  return "?";
}

}  // namespace folio
