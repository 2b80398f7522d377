#include "vision/vision_weights.h"

#include "core/dtype.h"
#include "core/error.h"

namespace folio {

const TensorView& VisionWeights::tensor(const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView& t = src_.get(name, shape);
  FOLIO_CHECK_INPUT(!dtype_is_block_quantized(t.dtype), "tensor '" + name + "' in " + src_.description() + " is " +
                                                             dtype_name(t.dtype) +
                                                             "; the vision encoder reads f32, f16 or bf16");
  used_.insert(name);
  return t;
}

std::vector<float> VisionWeights::f32(const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView& t = tensor(name, shape);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  convert_to_f32(t.dtype, t.data, v.data(), t.numel());
  return v;
}

void VisionWeights::reject_unused(const std::vector<std::string>& prefixes, const std::set<std::string>& ignored) const {
  for (const std::string& n : src_.names()) {
    if (used_.count(n) || ignored.count(n)) continue;
    for (const std::string& p : prefixes)
      if (n.rfind(p, 0) == 0)
        throw_invalid("unexpected tensor '" + n + "' in " + src_.description() +
                      " (not part of a vision encoder with this config)");
  }
}

}  // namespace folio
