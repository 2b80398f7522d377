#include "kernels/cpu/dense_attention.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels {

namespace {

// Query rows per task: a [64, T] score block (1 MiB at T = 4096) stays in L2.
constexpr int64_t kQueryBlock = 64;

// Parallelism is ours (one sgemm per pool thread at a time), as in matmul.cpp.
void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void dense_attention(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                     const RelPos2D* rel, float* out, ThreadPool& pool) {
  FOLIO_CHECK_INPUT(n_seq >= 0 && T > 0 && n_heads > 0 && head_dim > 0, "dense_attention: bad shape");
  if (rel)
    FOLIO_CHECK_INPUT(rel->side_h * rel->side_w == T && rel->table_h && rel->table_w,
                      "dense_attention: relative-position grid " + std::to_string(rel->side_h) + "x" +
                          std::to_string(rel->side_w) + " does not cover " + std::to_string(T) + " tokens");
  make_blas_single_threaded();
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t D = n_heads * head_dim, ld = 3 * D, d = head_dim;
  const int64_t q_blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = n_seq * n_heads * q_blocks;
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores, relh, relw;
    scores.resize(static_cast<size_t>(kQueryBlock * T));
    if (rel) {
      relh.resize(static_cast<size_t>(rel->side_h));
      relw.resize(static_cast<size_t>(rel->side_w));
    }
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / (n_heads * q_blocks);
      const int64_t h = (task / q_blocks) % n_heads;
      const int64_t q0 = (task % q_blocks) * kQueryBlock;
      const int64_t nq = std::min(kQueryBlock, T - q0);
      const float* base = qkv + s * T * ld;
      const float* Q = base + q0 * ld + h * d;
      const float* K = base + D + h * d;
      const float* V = base + 2 * D + h * d;
      float* S = scores.data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(T),
                  static_cast<blasint>(d), scale, Q, static_cast<blasint>(ld), K, static_cast<blasint>(ld), 0.0f, S,
                  static_cast<blasint>(T));
      for (int64_t i = 0; i < nq; ++i) {
        float* row = S + i * T;
        if (rel) {
          const int64_t sh = rel->side_h, sw = rel->side_w;
          const int64_t t = q0 + i, qy = t / sw, qx = t % sw;
          const float* q = Q + i * ld;
          for (int64_t ky = 0; ky < sh; ++ky) relh[ky] = dot(q, rel->table_h + (qy - ky + sh - 1) * d, d);
          for (int64_t kx = 0; kx < sw; ++kx) relw[kx] = dot(q, rel->table_w + (qx - kx + sw - 1) * d, d);
          for (int64_t ky = 0; ky < sh; ++ky)
            for (int64_t kx = 0; kx < sw; ++kx) row[ky * sw + kx] += relh[ky] + relw[kx];
        }
        // Softmax with the vectorised exp of the ISA table (T^2 exps per head: the SAM global blocks
        // of a 1024 view take 16.8 M per head).
        float m = row[0];
        for (int64_t j = 1; j < T; ++j) m = std::max(m, row[j]);
        const float inv = static_cast<float>(1.0 / table.exp_sum(row, T, m));
        for (int64_t j = 0; j < T; ++j) row[j] *= inv;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(nq), static_cast<blasint>(d),
                  static_cast<blasint>(T), 1.0f, S, static_cast<blasint>(T), V, static_cast<blasint>(ld), 0.0f,
                  out + (s * T + q0) * D + h * d, static_cast<blasint>(D));
    }
  });
}

}  // namespace folio::kernels
