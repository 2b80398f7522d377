// The normalised Walsh-Hadamard transform of rows of a power-of-two length d: y = H x / sqrt(d),
// with H the Sylvester Hadamard matrix. The transform is orthogonal and its own inverse (applying it
// twice gives x back, up to float rounding), so rotating both queries and keys leaves q.k unchanged,
// and rotating values rotates attention's output, which one more transform undoes. Quantised KV
// stores rotated rows: the rotation spreads a few large channels over all of them, so per-group
// scales fit the rest (QuaRot; llama.cpp rotates quantised caches the same way).
// O(d log d) per row, in place; any thread.
#pragma once

#include <cstdint>

namespace folio::kernels {

inline bool is_power_of_two(int64_t d) { return d > 0 && (d & (d - 1)) == 0; }

// Transforms `rows` consecutive rows of d floats in place. Precondition: is_power_of_two(d).
void hadamard_rows(float* x, int64_t rows, int64_t d);

}  // namespace folio::kernels
