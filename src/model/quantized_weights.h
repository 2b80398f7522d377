// QuantizedWeights: a checkpoint's decoder linears re-stored in a block format when the model
// loads (`--weights q8_0`, `--weights q4_k_m`, ...), so a checkpoint published in bf16 or f32 runs
// with the integer kernels without a conversion step on disk.
//
// Schemes: one format for every linear (q8_0, q4_0, q5_0, q4_k, q5_k, q6_k), or llama.cpp's mixes
// q4_k_m / q5_k_m: lm_head in q6_k; v_proj and the MLPs' down_proj in q6_k on the layers llama.cpp
// gives more bits (the first and last eighth of the layers and every third in between), the base
// format (q4_k / q5_k) elsewhere. A K format needs rows of a multiple of 256; other rows fall back as
// llama.cpp's quantizer does (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0). Embeddings, the MoE router and
// norms keep the checkpoint's type; so does a tensor already in a block format.
//
// Construction quantises every linear (single-threaded, seconds per GB of weights) and then never
// changes: find() is safe from any thread. The inner source must outlive this one.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "io/tensor_source.h"
#include "model/model_config.h"
#include "model/weight_names.h"

namespace folio {

struct WeightScheme {
  std::string name;       // as given: "q8_0", "q4_k_m", ...
  DType base = DType::Q8_0;
  bool k_mix = false;     // llama.cpp's _M mix (more bits for lm_head, v_proj, down_proj)
};

// The scheme for a --weights value, or nullopt for an unknown name.
std::optional<WeightScheme> parse_weight_scheme(const std::string& name);
// The accepted names, for help and error messages.
const char* weight_scheme_names();

// The format a linear gets under `scheme` (before the row-length fallback). `layer` is -1 for lm_head.
DType scheme_type_for(const WeightScheme& scheme, const std::string& role, int64_t layer, int64_t n_layers);

// The format llama.cpp's quantizer falls back to when a row of `cols` values does not fill whole
// blocks of `t` (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0, bf16 when not even 32 divides the row).
DType row_fallback(DType t, int64_t cols);

class QuantizedWeights : public TensorSource {
 public:
  QuantizedWeights(const TensorSource& inner, const ModelConfig& config, WeightNaming naming, WeightScheme scheme);

  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override { return inner_.names(); }
  std::string description() const override;

  const WeightScheme& scheme() const { return scheme_; }

 private:
  void quantize(const std::string& name, DType target, ThreadPool& pool);

  const TensorSource& inner_;
  WeightScheme scheme_;
  std::map<std::string, TensorView, std::less<>> views_;
  std::vector<std::vector<uint8_t>> storage_;
};

}  // namespace folio
