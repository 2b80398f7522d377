#include "model/expert_slices.h"

#include "model/weight_names.h"

namespace folio {

namespace {

bool is_stacked_experts(const TensorView& t) {
  static const std::string suffix = "_exps.weight";
  return t.shape.size() == 3 && t.name.size() > suffix.size() &&
         t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ExpertSliceSource::ExpertSliceSource(std::unique_ptr<TensorSource> inner) : inner_(std::move(inner)) {
  for (const std::string& n : inner_->names()) {
    const TensorView& t = *inner_->find(n);
    if (!is_stacked_experts(t)) {
      tensors_[n] = t;
      continue;
    }
    TensorView one = t;
    one.shape = {t.shape[1], t.shape[2]};
    const size_t expert_bytes = one.nbytes();
    for (int64_t e = 0; e < t.shape[0]; ++e) {
      one.name = expert_slice_name(n, e);
      one.data = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(e) * expert_bytes;
      tensors_[one.name] = one;
    }
  }
}

}  // namespace folio
