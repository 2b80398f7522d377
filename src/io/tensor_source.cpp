#include "io/tensor_source.h"

#include "core/error.h"

namespace folio {

TensorSource::~TensorSource() = default;

const TensorView& TensorSource::get(std::string_view name) const {
  const TensorView* t = find(name);
  if (!t) throw_invalid("tensor '" + std::string(name) + "' not found in " + description());
  return *t;
}

const TensorView& TensorSource::get(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  const TensorView& t = get(name);
  if (t.shape != expected_shape)
    throw_invalid("tensor '" + std::string(name) + "' has shape " + shape_to_string(t.shape) +
                  " but the config implies " + shape_to_string(expected_shape) + " (in " + description() + ")");
  return t;
}

const TensorView* TensorMapSource::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> TensorMapSource::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, _] : tensors_) out.push_back(name);
  return out;
}

}  // namespace folio
