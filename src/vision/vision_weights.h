// VisionWeights: shape-checked access to the vision tensors of a checkpoint, remembering which
// names were used so the encoder can reject tensors it does not understand.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/tensor_source.h"

namespace folio {

class VisionWeights {
 public:
  explicit VisionWeights(const TensorSource& src) : src_(src) {}

  // The named tensor with exactly this shape (any float dtype); throws InvalidInput naming it if it
  // is missing or has another shape. The view stays valid as long as the source.
  const TensorView& tensor(const std::string& name, const std::vector<int64_t>& shape);
  // The same, copied to f32 (norm weights, biases, position tables: small and read per token).
  std::vector<float> f32(const std::string& name, const std::vector<int64_t>& shape);

  // Throws InvalidInput for the first tensor under one of `prefixes` that was never asked for and is
  // not in `ignored` (e.g. a block the config does not have: the config and checkpoint disagree).
  void reject_unused(const std::vector<std::string>& prefixes, const std::set<std::string>& ignored) const;

  const TensorSource& source() const { return src_; }

 private:
  const TensorSource& src_;
  std::set<std::string> used_;
};

}  // namespace folio
