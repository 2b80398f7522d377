// PolicyRules: what each KV policy kind (kv_policy.h) means for the cache, as one object per kind.
//
// SequenceKV, admission and the OCR pipeline ask these questions instead of testing the kind, so a
// new policy is one more class here (as vLLM maps each attention spec to its own manager):
//   - windowed():  generated tokens go into a ring of the last W, not into the reference's blocks;
//   - selects_units(): a generated token reads a per-head selection of reference units (Quest)
//     rather than the whole reference, so the reference keeps unit key bounds;
//   - focuses_pages(): the page the decoder is on is read whole besides the selection;
//   - grows_reference_while_generating() / drops_segments(): the reference is a queue of pages;
//   - reference_reusable(): its KV may be kept for reuse across requests;
//   - compressible_reference(): the reference may be compressed once prefilled (KVPolicy::keep);
//   - pages_per_pass(): how many pages one OCR pass takes when the user does not say.
// The objects are stateless singletons: of() never fails and the references live forever; any
// thread may use them.
#pragma once

#include <cstddef>

#include "kv/kv_policy.h"

namespace folio {

class PolicyRules {
 public:
  virtual ~PolicyRules() = default;

  // The rules of `kind`.
  static const PolicyRules& of(KVPolicyKind kind);

  virtual bool windowed() const = 0;
  virtual bool selects_units() const { return false; }
  virtual bool focuses_pages() const { return false; }
  virtual bool grows_reference_while_generating() const { return false; }
  virtual bool drops_segments() const { return false; }
  virtual bool reference_reusable() const { return true; }
  virtual bool compressible_reference() const { return false; }
  // document_pages: the pages of the document; model_max: the most the model's pass takes;
  // default_max: the engine's default for a reference read whole.
  virtual size_t pages_per_pass(size_t document_pages, size_t model_max, size_t default_max) const;
  // InvalidInput when the policy's numbers make no sense for this kind (window < 1, top-k < 1, ...).
  virtual void validate(const KVPolicy& p) const;
};

}  // namespace folio
