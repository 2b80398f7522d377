#include "kernels/cpu/hadamard.h"

#include <cmath>

namespace folio::kernels {

void hadamard_rows(float* x, int64_t rows, int64_t d) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x + r * d;
    // Butterflies of growing span: after span h, every block of 2h is transformed.
    for (int64_t h = 1; h < d; h *= 2)
      for (int64_t i = 0; i < d; i += 2 * h)
        for (int64_t j = i; j < i + h; ++j) {
          const float a = v[j], b = v[j + h];
          v[j] = a + b;
          v[j + h] = a - b;
        }
    for (int64_t j = 0; j < d; ++j) v[j] *= scale;
  }
}

}  // namespace folio::kernels
