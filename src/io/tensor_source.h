// TensorSource: a read-only set of named tensors, the one interface every checkpoint format offers.
//
// Model code asks for tensors by name (and expected shape) and never sees the file format. Views
// stay valid for the lifetime of the source.
#pragma once

#include <cstdint>
#include <map>
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

// A TensorSource over views held in a name-ordered map, which a file format's parser fills
// (safetensors, GGUF): find() and names() come from the map.
class TensorMapSource : public TensorSource {
 public:
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;

 protected:
  std::map<std::string, TensorView, std::less<>> tensors_;
};

}  // namespace folio
