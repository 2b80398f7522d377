#include "model/io/tensor_source.h"

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

}  // namespace folio
