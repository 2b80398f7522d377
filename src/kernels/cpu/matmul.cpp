#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/row_interleave.h"
#include "core/quant_blocks.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/ops.h"

namespace folio::kernels {

namespace {

// From n = kDefaultGemmMinRows on, sgemm (including the conversion of W to f32) beats the GEMV
// kernels, whose cost grows linearly with n once the weight stream stops being the bottleneck
// (the crossover measured: docs/measurements.md).
constexpr int64_t kDefaultGemmMinRows = 20;
std::atomic<int64_t> g_gemm_min_rows{kDefaultGemmMinRows};

// Rows per thread chunk are multiples of this, so a chunk holds whole tiles of the block formats'
// GEMV (4 rows) and whole groups of interleaved q4_k (16 rows).
constexpr int64_t kRowGrain = 16;
// A decode GEMV is cut into this many chunks per thread, taken as threads come free
// (ThreadPool::parallel_chunks): on a shared machine one core is often slower for a moment, and
// equal fixed halves left the other waiting, spinning (docs/measurements.md).
constexpr int64_t kChunksPerThread = 4;

// Threading of the sgemm path: our pool owns all parallelism. W is cut into tiles of rows whose
// boundaries depend only on W's shape; each pool thread takes whole tiles, converts each into a
// thread-private f32 buffer and multiplies it with a single-threaded sgemm. So:
//  - every tile's sgemm call is the same whatever the thread count, and results are bit-identical
//    for any pool size (OpenBLAS's edge kernels would round differently if the split moved);
//  - the converted tile is still in the thread's cache when sgemm packs it, and conversion runs on
//    all threads;
//  - there is never more than one busy thread per core (OpenBLAS's own threads would otherwise
//    compete with our spinning pool workers).
// OpenBLAS's thread count is global, so it is set to 1 once, on the first sgemm-path call.
void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// Rows per tile: at most ~2 MiB of f32 (to stay in L2/L3 while sgemm packs it), at least 128 rows
// (narrower tiles measured slower: sgemm re-packs X for every tile), and small enough for
// >= 8 tiles to balance the threads. Depends only on W's shape (see above).
int64_t gemm_tile_rows(int64_t out, int64_t in) {
  const int64_t cache_rows = (int64_t{1} << 19) / std::max<int64_t>(in, 1);
  const int64_t balance_rows = (out + 7) / 8;
  const int64_t rows = std::min(cache_rows, balance_rows);
  return std::clamp<int64_t>((rows + 15) / 16 * 16, 128, 512);
}

void sgemm_tile(const float* x, int64_t n, int64_t in, const float* w, int64_t rows, float* y, int64_t ldy) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), static_cast<blasint>(rows),
              static_cast<blasint>(in), 1.0f, x, static_cast<blasint>(in), w, static_cast<blasint>(in), 0.0f, y,
              static_cast<blasint>(ldy));
}

void matmul_gemm(const detail::KernelTable& table, const TensorView& w, const float* x, int64_t n, float* y,
                 ThreadPool& pool) {
  make_blas_single_threaded();
  const int64_t out = w.shape[0], in = w.shape[1];
  const size_t rb = w.row_bytes();
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const DType dt = w.dtype;
  const int64_t tile = gemm_tile_rows(out, in);
  const int64_t tiles = (out + tile - 1) / tile;
  pool.parallel_for(tiles, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t r = t * tile, rows = std::min(tile, out - r);
      if (dt == DType::F32) {
        sgemm_tile(x, n, in, reinterpret_cast<const float*>(wb + r * rb), rows, y + r, out);
        continue;
      }
      // Reused across calls: a fresh multi-MiB allocation per call would page-fault every time.
      thread_local std::vector<float> buf;
      if (buf.size() < static_cast<size_t>(tile * in)) buf.resize(static_cast<size_t>(tile * in));
      table.to_f32[static_cast<int>(dt)](wb + r * rb, rb, in, rows, buf.data());
      sgemm_tile(x, n, in, buf.data(), rows, y + r, out);
    }
  });
}

// Tiles of the bf16 path: whole panels of the micro-kernel (kBf16PanelCols weight rows), each tile's
// chunk of the input (bf16_gemm takes kBf16ChunkPairs pairs at a time) <= ~640 KiB of packed bf16
// (it is re-read from L2 for every panel of activation rows, and every tile reads all of X once:
// fewer, larger tiles read X fewer times), their count a multiple of the pool's threads and their
// sizes within one panel of each other, so the threads get equal work (nine tiles on two threads
// left one idle for a ninth of the time). The split never changes a bit: every output is one sum
// over `in` within one tile.
struct Bf16Tiles {
  int64_t panels, count;
  Bf16Tiles(int64_t out, int64_t in, int64_t threads) : panels((out + kBf16PanelCols - 1) / kBf16PanelCols) {
    const int64_t width = std::clamp<int64_t>(in, 1, 2 * kBf16ChunkPairs);
    const int64_t cache_panels = std::max<int64_t>(2, ((int64_t{5} << 16) / width) / kBf16PanelCols);
    const int64_t needed = std::max((panels + cache_panels - 1) / cache_panels, threads);
    count = std::min(panels, (needed + threads - 1) / threads * threads);
  }
  int64_t first_row(int64_t t) const { return t * panels / count * kBf16PanelCols; }
};

// Runs fn(r, rows, packed) for every tile of W's rows over the pool, `packed` holding the tile
// (each thread packs whole tiles into its own buffer).
template <typename Fn>
void for_bf16_tiles(const TensorView& w, ThreadPool& pool, Fn fn) {
  const int64_t out = w.shape[0];
  const Bf16Tiles tiles(out, w.shape[1], pool.size());
  pool.parallel_chunks(tiles.count, [&](int64_t t) {
    thread_local std::vector<uint32_t> packed;
    const int64_t r = tiles.first_row(t), rows = std::min(tiles.first_row(t + 1), out) - r;
    pack_bf16_weights(w, r, rows, packed);
    fn(r, rows, packed.data());
  });
}

// The bf16 path: X rounded and packed once, shared by the threads.
void matmul_gemm_bf16(const TensorView& w, const float* x, int64_t n, float* y, ThreadPool& pool, const float* bias) {
  matmul_bf16(w, Bf16Activations(x, n, w.shape[1], pool), y, pool, bias);
}

// Block-quantised weights are multiplied with activations quantised to 8 bits (ActQ8 per 32 or
// ActQ8K per 256 elements, as llama.cpp does), once per call for all weight rows.
size_t act_row_bytes(DType t, int64_t in) {
  return dtype_block_elems(t) == 256 ? static_cast<size_t>(in / 256) * sizeof(ActQ8K) : static_cast<size_t>(in / 32) * sizeof(ActQ8);
}

void quantize_activations(DType t, const float* x, int64_t n, int64_t in, uint8_t* dst) {
  const size_t rb = act_row_bytes(t, in);
  const detail::QuantizeActFn quantize = detail::table_for(active_isa()).quantize_act[dtype_block_elems(t) == 256 ? 1 : 0];
  for (int64_t g = 0; g < n; ++g) quantize(x + g * in, dst + g * rb, in);
}

// The quantised activations of a call, starting on a cache line (ActQ8K's codes stay on lines), in
// a buffer of the calling thread's kept between calls (decode calls hundreds of times per token).
uint8_t* activation_buffer(size_t bytes) {
  struct alignas(64) Line {
    uint8_t b[64];
  };
  thread_local std::vector<Line> lines;
  lines.resize(std::max<size_t>(1, (bytes + 63) / 64));
  return lines.front().b;
}

// True when b's activations quantise to the bytes a's did: both block formats of one activation
// kind (per 32 or per 256 elements), the same shape, and the same input values.
bool same_quantized_input(const MatmulJob& a, const MatmulJob& b) {
  const DType ta = a.w->dtype, tb = b.w->dtype;
  if (!dtype_is_block_quantized(ta) || !dtype_is_block_quantized(tb) || dtype_block_elems(ta) != dtype_block_elems(tb)) return false;
  if (a.n != b.n || a.w->shape[1] != b.w->shape[1]) return false;
  return a.x == b.x || std::memcmp(a.x, b.x, static_cast<size_t>(a.n * a.w->shape[1]) * sizeof(float)) == 0;
}

// One decode-sized product: GEMV rows [b, e) of w against x (or its quantised rows xq).
void gemv_range(const detail::KernelTable& table, const TensorView& w, const float* x, const uint8_t* xq, int64_t n,
                float* y, int64_t b, int64_t e) {
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const int64_t out = w.shape[0], in = w.shape[1];
  const int t = static_cast<int>(w.dtype);
  if (dtype_is_block_quantized(w.dtype))
    table.qgemv[t - static_cast<int>(DType::Q8_0)](wb, w.row_bytes(), in, b, e, xq, n, y, out);
  else
    table.gemv[t](wb, w.row_bytes(), in, b, e, x, n, y, out);
}

// Where each chunk of matmul_many's concatenated rows begins (chunks + 1 cuts, the last the row
// count). Chunks hold equal weight bytes rather than equal rows: the jobs mix formats
// (q4_k gate/up beside q8_0 or q5_0 down rows of other widths), and a decode GEMV's time follows
// the bytes it reads. Cuts fall on multiples of kRowGrain within a job; a row's result does not
// depend on where the cuts are.
std::vector<int64_t> byte_balanced_cuts(const std::vector<const MatmulJob*>& jobs, const std::vector<int64_t>& start,
                                        int chunks) {
  std::vector<double> cost = {0};  // bytes before each job
  for (const MatmulJob* j : jobs) cost.push_back(cost.back() + static_cast<double>(j->w->nbytes()) * static_cast<double>(j->n));
  std::vector<int64_t> cuts = {0};
  size_t k = 0;
  for (int t = 1; t < chunks; ++t) {
    const double target = cost.back() * t / chunks;
    while (k + 1 < jobs.size() && cost[k + 1] <= target) ++k;
    const int64_t rows = jobs[k]->w->shape[0];
    const double per_row = (cost[k + 1] - cost[k]) / static_cast<double>(std::max<int64_t>(rows, 1));
    int64_t r = per_row > 0 ? std::llround((target - cost[k]) / per_row / kRowGrain) * kRowGrain : 0;
    cuts.push_back(std::max(cuts.back(), start[k] + std::clamp<int64_t>(r, 0, rows)));
  }
  cuts.push_back(start.back());
  return cuts;
}

// Interleaved rows are cut by whole groups (core/row_interleave.h): a view that is not whole groups
// is refused before anything is read. `who` names the weight.
void check_whole_groups(const TensorView& w, const std::string& who) {
  FOLIO_CHECK_INPUT(!dtype_is_interleaved(w.dtype) || w.shape[0] % kGroupRows == 0,
                    who + " is " + dtype_name(w.dtype) + " with " + std::to_string(w.shape[0]) +
                        " rows, not whole groups of 16");
}

int dtype_index_for_vector_op(DType t, const char* op) {
  if (dtype_is_block_quantized(t))
    throw_invalid(std::string(op) + ": " + dtype_name(t) + " operands are not supported (use f32, f16 or bf16)");
  return static_cast<int>(t);
}

}  // namespace

const char* gemm_precision_name(GemmPrecision p) { return p == GemmPrecision::Bf16 ? "bf16" : "f32"; }

GemmPrecision gemm_precision_from_name(std::string_view name, std::string_view what) {
  if (name == "f32") return GemmPrecision::F32;
  if (name == "auto") return bf16_gemm_supported() ? GemmPrecision::Bf16 : GemmPrecision::F32;
  FOLIO_CHECK_INPUT(name == "bf16", std::string(what) + " must be auto, f32 or bf16, got '" + std::string(name) + "'");
  FOLIO_CHECK_INPUT(bf16_gemm_supported(), std::string(what) + " bf16 needs a CPU with AVX512-BF16, which this one lacks (use auto or f32)");
  return GemmPrecision::Bf16;
}

bool matmul_uses_bf16(const TensorView&, GemmPrecision precision) {
  return precision == GemmPrecision::Bf16 && bf16_gemm_supported();
}

int64_t matmul_gemm_min_rows() { return g_gemm_min_rows.load(std::memory_order_relaxed); }

namespace {
thread_local bool t_row_invariant = false;

// The sgemm (or bf16 GEMM) path for n rows: large n, unless rows must not depend on their company.
bool takes_gemm_path(int64_t n) { return n >= matmul_gemm_min_rows() && !t_row_invariant; }
}  // namespace

RowInvariantScope::RowInvariantScope(bool active) : previous_(t_row_invariant) { t_row_invariant = previous_ || active; }
RowInvariantScope::~RowInvariantScope() { t_row_invariant = previous_; }
bool RowInvariantScope::active_on_this_thread() { return t_row_invariant; }

void set_matmul_gemm_min_rows(int64_t n) { g_gemm_min_rows.store(n, std::memory_order_relaxed); }

void matmul_bf16(const TensorView& w, const Bf16Activations& x, float* y, ThreadPool& pool, const float* bias) {
  const int64_t out = w.shape[0];
  for_bf16_tiles(w, pool, [&](int64_t r, int64_t rows, const uint32_t* packed) {
    bf16_gemm(x, packed, rows, y + r, out, bias ? bias + r : nullptr);
  });
}

void matmul_bf16_rounded(const TensorView& w, const Bf16Activations& x, uint16_t* y, ThreadPool& pool, const float* bias) {
  const int64_t out = w.shape[0];
  for_bf16_tiles(w, pool, [&](int64_t r, int64_t rows, const uint32_t* packed) {
    bf16_gemm_to_bf16(x, packed, rows, y + r, out, bias ? bias + r : nullptr);
  });
}

void matmul_bf16_activated(const TensorView& w, const Bf16Activations& x, const float* bias, Activation act,
                           Bf16Activations& y, ThreadPool& pool) {
  y.reset(x.rows(), w.shape[0]);
  for_bf16_tiles(w, pool, [&](int64_t r, int64_t rows, const uint32_t* packed) {
    bf16_gemm_to_activations(x, packed, r, rows, bias ? bias + r : nullptr, act, y);
  });
}

bool matmul_takes_bf16_gemm(const TensorView& w, int64_t n, GemmPrecision precision) {
  return takes_gemm_path(n) && w.shape.size() == 2 && w.shape[1] > 0 && matmul_uses_bf16(w, precision);
}

namespace {

// matmul without a bias, on every path but the bf16 GEMM.
void matmul_unbiased(const TensorView& w, const float* x, int64_t n, float* y, ThreadPool& pool, int64_t in, int64_t out) {
  if (in == 0) {
    std::fill(y, y + n * out, 0.0f);
    return;
  }
  const detail::KernelTable& table = detail::table_for(active_isa());
  if (takes_gemm_path(n)) {
    matmul_gemm(table, w, x, n, y, pool);
    return;
  }
  // The workers get a pointer: the buffer is the calling thread's.
  const uint8_t* xq = nullptr;
  if (dtype_is_block_quantized(w.dtype)) {
    uint8_t* buffer = activation_buffer(static_cast<size_t>(n) * act_row_bytes(w.dtype, in));
    quantize_activations(w.dtype, x, n, in, buffer);
    xq = buffer;
  }
  const int64_t units = (out + kRowGrain - 1) / kRowGrain;
  const int64_t chunks = std::min<int64_t>(units, kChunksPerThread * pool.size());
  pool.parallel_chunks(chunks, [&](int64_t c) {
    gemv_range(table, w, x, xq, n, y, std::min(out, units * c / chunks * kRowGrain), std::min(out, units * (c + 1) / chunks * kRowGrain));
  });
}

}  // namespace

void matmul(const TensorView& w, const float* x, int64_t n, float* y, ThreadPool& pool, GemmPrecision precision,
            const float* bias) {
  const std::string who = "matmul: weight '" + w.name + "'";
  FOLIO_CHECK_INPUT(w.shape.size() == 2, who + " must be 2-D [out, in], got shape " + shape_to_string(w.shape));
  FOLIO_CHECK_INPUT(n >= 0, who + ": negative number of input rows " + std::to_string(n));
  const int64_t out = w.shape[0], in = w.shape[1];
  FOLIO_CHECK_INPUT(out >= 0 && in >= 0, who + " has a negative dimension " + shape_to_string(w.shape));
  FOLIO_CHECK_INPUT(in % dtype_block_elems(w.dtype) == 0,
                    who + " is " + dtype_name(w.dtype) + " with " + std::to_string(in) +
                        " columns, not a multiple of the block size " + std::to_string(dtype_block_elems(w.dtype)));
  check_whole_groups(w, who);
  if (n == 0 || out == 0) return;
  FOLIO_CHECK_INPUT(w.data != nullptr || in == 0, who + " has no data");
  if (matmul_takes_bf16_gemm(w, n, precision)) {
    matmul_gemm_bf16(w, x, n, y, pool, bias);  // the bias is the sums' first term
    return;
  }
  matmul_unbiased(w, x, n, y, pool, in, out);
  if (!bias) return;
  pool.parallel_for(n, [&](int64_t r0, int64_t r1) { add_bias(y + r0 * out, bias, r1 - r0, out); });
}

void matmul_many(std::span<const MatmulJob> jobs, ThreadPool& pool, GemmPrecision precision) {
  const detail::KernelTable& table = detail::table_for(active_isa());
  std::vector<const MatmulJob*> fused;
  std::vector<int64_t> start = {0};  // first concatenated row of each fused job
  std::vector<size_t> act_start;     // where each fused job's quantised activations begin in xq
  for (const MatmulJob& j : jobs) {
    const TensorView& w = *j.w;
    if (takes_gemm_path(j.n) || w.shape.size() != 2 || w.shape[1] == 0 || j.n == 0) {
      matmul(w, j.x, j.n, j.y, pool, precision);  // validates and handles the large and degenerate cases
      continue;
    }
    FOLIO_CHECK_INPUT(w.data != nullptr && w.shape[1] % dtype_block_elems(w.dtype) == 0,
                      "matmul: weight '" + w.name + "' has no data or a row length not a multiple of its block");
    check_whole_groups(w, "matmul: weight '" + w.name + "'");
    fused.push_back(&j);
    start.push_back(start.back() + w.shape[0]);
  }
  if (fused.empty()) return;
  // Jobs with the same input (q, k and v; an expert's gate and up; the experts one token chose,
  // each with its own copy of that token) share one quantised copy of it.
  size_t act_bytes = 0;
  std::vector<bool> quantize_here;
  for (size_t k = 0; k < fused.size(); ++k) {
    const MatmulJob& j = *fused[k];
    size_t at = act_bytes;
    bool fresh = dtype_is_block_quantized(j.w->dtype);
    for (size_t i = 0; i < k && fresh; ++i)
      if (same_quantized_input(*fused[i], j)) at = act_start[i], fresh = false;
    act_start.push_back(at);
    quantize_here.push_back(fresh);
    if (fresh) act_bytes += (static_cast<size_t>(j.n) * act_row_bytes(j.w->dtype, j.w->shape[1]) + 63) / 64 * 64;
  }
  uint8_t* xq = activation_buffer(act_bytes);  // as in matmul(): workers see it through `xq`
  for (size_t k = 0; k < fused.size(); ++k) {
    const TensorView& w = *fused[k]->w;
    if (quantize_here[k]) quantize_activations(w.dtype, fused[k]->x, fused[k]->n, w.shape[1], xq + act_start[k]);
  }
  const std::vector<int64_t> cuts = byte_balanced_cuts(fused, start, static_cast<int>(kChunksPerThread * pool.size()));
  pool.parallel_chunks(static_cast<int64_t>(cuts.size()) - 1, [&](int64_t t) {
    const int64_t b = cuts[static_cast<size_t>(t)], e = cuts[static_cast<size_t>(t) + 1];
    // Jobs overlapping [b, e), each on its local row range.
    size_t k = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), b) - start.begin()) - 1;
    for (; k < fused.size() && start[k] < e; ++k) {
      const MatmulJob& j = *fused[k];
      const int64_t out = j.w->shape[0];
      const int64_t r0 = std::max<int64_t>(b - start[k], 0), r1 = std::min<int64_t>(e - start[k], out);
      if (r0 < r1) gemv_range(table, *j.w, j.x, xq + act_start[k], j.n, j.y, r0, r1);
    }
  });
}

float dot(const float* a, const void* b, DType bt, int64_t n) {
  int t = dtype_index_for_vector_op(bt, "dot");
  return detail::table_for(active_isa()).dot[t](a, b, n);
}

void axpy(float alpha, const void* x, DType xt, float* y, int64_t n) {
  int t = dtype_index_for_vector_op(xt, "axpy");
  detail::table_for(active_isa()).axpy[t](alpha, x, y, n);
}

}  // namespace folio::kernels
