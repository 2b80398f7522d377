// TensorSource: a read-only set of named tensors, the one interface every checkpoint format offers.
//
// Model code asks for tensors by name (and expected shape) and never sees the file format. Views
// stay valid for the lifetime of the source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace folio {

class TensorSource {
 public:
  virtual ~TensorSource();

  // The tensor with this exact name, or nullptr.
  virtual const TensorView* find(std::string_view name) const = 0;
  // All tensor names, sorted.
  virtual std::vector<std::string> names() const = 0;
  // Where the tensors come from (usually the path), used in error messages.
  virtual std::string description() const = 0;

  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // The named tensor; throws InvalidInput "tensor 'X' not found in <description>" if absent.
  const TensorView& get(std::string_view name) const;
  // As above, and also throws InvalidInput if the shape differs:
  // "tensor 'X' has shape [a, b] but the config implies [c, d] (in <description>)".
  const TensorView& get(std::string_view name, const std::vector<int64_t>& expected_shape) const;
};

}  // namespace folio
