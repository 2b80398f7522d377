// The element-wise activations of the vision encoders' MLPs, named for the kernels that fuse them
// into a product (bf16_gemm_to_activations, kernels::mlp).
#pragma once

namespace folio::kernels {

enum class Activation {
  GeluErf,    // 0.5 x (1 + erf(x / sqrt 2)): SAM
  QuickGelu,  // x sigmoid(1.702 x): CLIP
};

}  // namespace folio::kernels
