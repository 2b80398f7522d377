#include "core/tensor.h"

namespace folio {

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<float> to_f32_vector(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  convert_to_f32(t.dtype, t.data, v.data(), t.numel());
  return v;
}

}  // namespace folio
