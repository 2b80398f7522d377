#include "kv/kv_policy.h"

#include <algorithm>

#include "core/error.h"

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
  if (window < 1) throw_invalid("window must be at least 1, got " + std::to_string(window));
  p.window = window;
  return p;
}

size_t KVPolicy::automatic_pages_per_pass(size_t document_pages, size_t model_max, size_t default_max) const {
  switch (kind) {
    case KVPolicyKind::Rolling: return document_pages;
    case KVPolicyKind::Sparse: return model_max;
    case KVPolicyKind::Full:
    case KVPolicyKind::RSwa: break;
  }
  return std::min(default_max, model_max);
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
