// Matrix product with bf16 operands and f32 sums, for CPUs with AVX512-BF16.
//
// vdpbf16ps multiplies 32 pairs of bf16 values per instruction and adds them into 16 f32 lanes,
// twice the products of an f32 FMA; a GEMM built on it runs the vision encoder's linears at about
// twice sgemm's rate. The price is precision: the f32 activations are rounded to bf16 (8 significant
// bits), the precision the official model computes in. Weights stored as bf16 are taken exactly;
// f16 and f32 weights are rounded to bf16 too.
//
// Use: pack the activations once (Bf16Activations), pack a run of weight rows (pack_bf16_weights),
// multiply (bf16_gemm). Every output is one f32 sum over the whole input width in a fixed order
// (pairs, in order of k), so a result does not depend on how rows are split over threads or on the
// number of activation rows. It may differ in the last bits between CPU vendors: vdpbf16ps's
// intermediate rounding is the hardware's.
//
// Preconditions: bf16_gemm_supported() is true (the packing and product functions are compiled for
// AVX512-BF16 and are undefined on other CPUs). Threads: the packed objects are read-only once
// built, so any number of threads may multiply with them at once.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/activation.h"

namespace folio::kernels {

// True when the CPU reports AVX-512 F/BW/VL/DQ and AVX512-BF16.
bool bf16_gemm_supported();

// True when the products below can run on AMX tiles: bf16_gemm_supported(), the CPU has AMX-BF16,
// and the kernel granted this process the tile state (asked once, on the first call). Then
// bf16_gemm, bf16_gemm_to_bf16 and bf16_gemm_to_activations take them (bf16_amx_active()); their
// sums keep every promise below but may differ in the last bits from the AVX-512 kernel's.
bool bf16_amx_supported();
bool bf16_amx_active();
// set_bf16_amx(false) (tests, benchmarks) keeps the AVX-512 kernel where AMX is supported.
void set_bf16_amx(bool enabled);

// Activation rows per micro-kernel panel, and weight rows (output columns) per weight panel.
inline constexpr int64_t kBf16PanelRows = 14;
inline constexpr int64_t kBf16PanelCols = 32;
// Input pairs bf16_gemm takes per pass over the panels (an activation panel's chunk: 21 KiB).
inline constexpr int64_t kBf16ChunkPairs = 384;

// X [n, in] (f32, rows `ld` apart) rounded to bf16 and laid out in panels of kBf16PanelRows rows:
// for each pair of input columns (2p, 2p+1), the panel's rows' pairs are adjacent (one 32-bit word
// per row). Rows past n and the odd column past an odd `in` are zero. Reusable: assign() keeps the
// storage, so a thread packing block after block does not allocate each time.
class Bf16Activations {
 public:
  // Row r of a matrix being packed: a pointer to its `in` floats, which the source may first write
  // into `scratch` (room for `in` floats), or nullptr for a row of zeros. Called from the pool's
  // threads, each row once.
  using RowSource = std::function<const float*(int64_t r, float* scratch)>;

  Bf16Activations() = default;
  // Packs contiguous rows, the panels split over `pool`.
  Bf16Activations(const float* x, int64_t n, int64_t in, ThreadPool& pool);
  // Packs n rows that `rows` produces (a LayerNorm computed as the rows are packed, rows gathered
  // from another layout), the panels split over `pool`: the words packing the produced rows as one
  // f32 matrix would give.
  Bf16Activations(int64_t n, int64_t in, const RowSource& rows, ThreadPool& pool);
  // Packs on the calling thread.
  void assign(const float* x, int64_t n, int64_t in, int64_t ld);
  // Packs the transpose of a row-major [in, n] matrix whose rows are `ld` apart (row i, element k
  // is x[k * ld + i]: V^T of an attention head), on the calling thread.
  void assign_transposed(const float* x, int64_t n, int64_t in, int64_t ld);
  // The same two from values already rounded to bf16 (bf16_gemm_to_bf16's output): the words
  // assign / assign_transposed would pack from their f32 values.
  void assign(const uint16_t* x, int64_t n, int64_t in, int64_t ld);
  void assign_transposed(const uint16_t* x, int64_t n, int64_t in, int64_t ld);
  // Sizes the storage for n rows of width `in`, to be written by bf16_gemm_to_activations; the
  // contents are unspecified until then.
  void reset(int64_t n, int64_t in);

  int64_t rows() const { return n_; }
  int64_t width() const { return in_; }
  int64_t pairs() const { return pairs_; }
  int64_t panels() const { return panels_; }
  const uint32_t* panel(int64_t i) const { return data_.data() + i * pairs_ * kBf16PanelRows; }
  uint32_t* panel(int64_t i) { return data_.data() + i * pairs_ * kBf16PanelRows; }

 private:
  void shape(int64_t n, int64_t in);
  void pack_panel(const float* x, int64_t ld, int64_t i);
  void pack_panel(const RowSource& rows, int64_t i);

  int64_t n_ = 0, in_ = 0, pairs_ = 0, panels_ = 0;
  std::vector<uint32_t> data_;
};

// Rows [r0, r0 + rows) of the 2-D weight w [out, in] (any dtype: float, or a block format
// dequantised) rounded to bf16 and laid out in panels of kBf16PanelCols rows, pairs of input
// columns adjacent, as the micro-kernel reads them: with pairs = ceil(in / 2), the word of row r and
// columns (2p, 2p + 1) is out[(r / kBf16PanelCols) * kBf16PanelCols * pairs + p * kBf16PanelCols +
// r % kBf16PanelCols], column 2p in its low half. `out` is resized to hold them (rows past the
// end and an odd last column are zero).
void pack_bf16_weights(const TensorView& w, int64_t r0, int64_t rows, std::vector<uint32_t>& out);

// The same for an f32 matrix of `rows` x `in` whose element (r, k) is src[r * row_stride + k *
// col_stride]: K of an attention head is (ld, 1), V transposed is (1, ld).
void pack_bf16_weights(const float* src, int64_t rows, int64_t in, int64_t row_stride, int64_t col_stride,
                       std::vector<uint32_t>& out);

// The same for a bf16 matrix (rows `row_stride` apart, columns contiguous): Q of an attention head
// in a map bf16_gemm_to_bf16 wrote.
void pack_bf16_weights(const uint16_t* src, int64_t rows, int64_t in, int64_t row_stride, std::vector<uint32_t>& out);

// y[i * ldy + c] = sum_k x[i, k] * w[r0 + c, k] for i < x.rows(), c < rows, where packed_w holds
// those rows (pack_bf16_weights with the same width as x); given `bias` (rows floats), each sum
// starts from bias[c]. Inputs wider than kBf16ChunkPairs pairs are taken a chunk at a time, the
// partial sums kept in y (the same bits as one pass). Single-threaded.
void bf16_gemm(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, float* y, int64_t ldy,
               const float* bias = nullptr);

// The sums of bf16_gemm (bias included), rounded to bf16 as packing their f32 values would (round
// to nearest even) and stored as y[i * ldy + c], half the bytes of f32 for a map that is only read
// again in bf16 (an attention's qkv). The whole input in one pass (the bits of bf16_gemm's
// chunks). Single-threaded.
void bf16_gemm_to_bf16(const Bf16Activations& x, const uint32_t* packed_w, int64_t rows, uint16_t* y, int64_t ldy,
                       const float* bias = nullptr);

// The same sums, bias included, for weight rows [r0, r0 + rows) (packed_w holds them), put through
// `act` and written as columns [r0, r0 + rows) of y, rounded and packed as Bf16Activations packs:
// the next linear's input, without the f32 map between (and the bits of bf16_gemm, the activation
// of the AVX-512 kernel table, and packing). Preconditions: y.reset(x.rows(), out) with out >= r0 +
// rows; r0 a multiple of kBf16PanelCols; rows even unless r0 + rows == out. Calls for disjoint
// column ranges may run on different threads at once. The whole input in one pass (no chunks).
void bf16_gemm_to_activations(const Bf16Activations& x, const uint32_t* packed_w, int64_t r0, int64_t rows,
                              const float* bias, Activation act, Bf16Activations& y);

}  // namespace folio::kernels
