// ExpertSliceSource: a checkpoint whose routed experts are stacked, seen one expert at a time.
//
// llama.cpp's GGUF layout stores a MoE layer's experts as one 3-D tensor per projection,
// "blk.L.ffn_up_exps.weight" of shape [n_experts, out, in] (each expert's rows contiguous, in any
// block format, since blocks never straddle rows). The decoder asks for one expert's [out, in]
// matrix; this source answers "blk.L.ffn_up_exps.weight[e]" with a view into the stacked tensor,
// so nothing is copied. Every other tensor passes through unchanged.
//
// names() lists the slices in place of the stacked tensors, so a consumer that checks it used every
// tensor (the Decoder does) sees each expert. Built once at construction; thread-safe afterwards.
// The inner source must outlive this one.
#pragma once

#include <memory>
#include <string>

#include "io/tensor_source.h"

namespace folio {

class ExpertSliceSource : public TensorMapSource {
 public:
  // A 3-D tensor whose name ends in "_exps.weight" is split; other 3-D tensors are left whole.
  explicit ExpertSliceSource(std::unique_ptr<TensorSource> inner);

  const TensorSource& inner() const { return *inner_; }
  std::string description() const override { return inner_->description(); }

 private:
  std::unique_ptr<TensorSource> inner_;
};

}  // namespace folio
