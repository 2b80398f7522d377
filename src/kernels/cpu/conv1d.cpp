#include "kernels/cpu/conv1d.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"

namespace folio::kernels {

void conv1d_tc(const float* x, int64_t T, int64_t C, const TensorView& w, const float* bias, int64_t pad, float* y,
               ThreadPool& pool) {
  FOLIO_CHECK_INPUT(w.shape.size() == 3 && w.shape[1] == C && w.shape[2] > 0,
                    "conv1d weight '" + w.name + "' has shape " + shape_to_string(w.shape) + ", expected [out, " +
                        std::to_string(C) + ", k]");
  FOLIO_CHECK_INPUT(pad >= 0, "conv1d '" + w.name + "': negative padding");
  const int64_t O = w.shape[0], k = w.shape[2], K = C * k;
  const int64_t To = T + 2 * pad - k + 1;
  FOLIO_CHECK_INPUT(To > 0, "conv1d '" + w.name + "': sequence of " + std::to_string(T) + " is shorter than the kernel");
  TensorView w2 = w;  // the same bytes seen as a [O, C*k] matrix
  w2.shape = {O, K};
  std::vector<float> cols(static_cast<size_t>(To * K));
  pool.parallel_for(To, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* row = cols.data() + t * K;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < k; ++j) {
          const int64_t it = t - pad + j;
          row[c * k + j] = (it >= 0 && it < T) ? x[it * C + c] : 0.0f;
        }
    }
  });
  matmul(w2, cols.data(), To, y, pool);
  if (bias) add_bias(y, bias, To, O);
}

}  // namespace folio::kernels
