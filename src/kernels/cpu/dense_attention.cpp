#include "kernels/cpu/dense_attention.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/dense_attention_bf16.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/row_max.h"

namespace folio::kernels {

namespace {

// Query rows per task: a [64, T] score block (1 MiB at T = 4096) stays in L2.
constexpr int64_t kQueryBlock = 64;

// Parallelism is ours (one sgemm per pool thread at a time), as in matmul.cpp.
void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// row[ky * sw + kx] += <q, table_h[qy - ky + sh - 1]> + <q, table_w[qx - kx + sw - 1]> for query
// token t = (qy, qx) (SAM's decomposed relative positions), from the query's rows of
// project_on_table.
void add_relative_positions(const RelPos2D& rel, int64_t t, const float* ph, const float* pw, float* row) {
  const int64_t sh = rel.side_h, sw = rel.side_w, qy = t / sw, qx = t % sw;
  for (int64_t ky = 0; ky < sh; ++ky) {
    float* r = row + ky * sw;
    const float h = ph[qy - ky + sh - 1];
    const float* w = pw + qx + sw - 1;  // w[-kx] is the term of key column kx
    for (int64_t kx = 0; kx < sw; ++kx) r[kx] += h + w[-kx];
  }
}

// Relative-position terms of nq queries (rows of Q `ld` apart): dst [nq, 2 * side - 1] =
// Q . table^T, one sgemm; entry (i, j) is <q_i, table row j>.
void project_on_table(const float* Q, int64_t ld, int64_t nq, int64_t d, const float* table, int64_t side, float* dst) {
  const int64_t L = 2 * side - 1;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(L),
              static_cast<blasint>(d), 1.0f, Q, static_cast<blasint>(ld), table, static_cast<blasint>(d), 0.0f, dst,
              static_cast<blasint>(L));
}

}  // namespace

namespace {

void check_attention(int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, const RelPos2D* rel) {
  FOLIO_CHECK_INPUT(n_seq >= 0 && T > 0 && n_heads > 0 && head_dim > 0, "dense_attention: bad shape");
  if (rel)
    FOLIO_CHECK_INPUT(rel->side_h * rel->side_w == T && rel->table_h && rel->table_w,
                      "dense_attention: relative-position grid " + std::to_string(rel->side_h) + "x" +
                          std::to_string(rel->side_w) + " does not cover " + std::to_string(T) + " tokens");
}

// qkv_attention on the bf16 GEMM, its input packed: the qkv map stored rounded to bf16.
void qkv_attention_bf16(const TensorView& w_qkv, const float* b_qkv, const Bf16Activations& x, int64_t n_seq,
                        int64_t T, int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel,
                        float* qkv_scratch, float* out, ThreadPool& pool) {
  check_attention(n_seq, T, n_heads, head_dim, rel);
  FOLIO_CHECK_INPUT(w_qkv.shape[0] == 3 * n_heads * head_dim,
                    "qkv_attention: weight '" + w_qkv.name + "' has " + std::to_string(w_qkv.shape[0]) + " rows, expected " +
                        std::to_string(3 * n_heads * head_dim));
  auto* qkv = reinterpret_cast<uint16_t*>(qkv_scratch);  // half of what the f32 map would take
  matmul_bf16_rounded(w_qkv, x, qkv, pool, b_qkv);
  detail::dense_attention_bf16(qkv, n_seq, T, n_heads, head_dim, scale, rel, out, pool);
}

}  // namespace

void qkv_attention(const TensorView& w_qkv, const float* b_qkv, const float* x, int64_t n_seq, int64_t T,
                   int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel, float* qkv_scratch, float* out,
                   ThreadPool& pool, GemmPrecision precision) {
  const int64_t rows = n_seq * T;
  if (matmul_takes_bf16_gemm(w_qkv, rows, precision))
    return qkv_attention_bf16(w_qkv, b_qkv, Bf16Activations(x, rows, w_qkv.shape[1], pool), n_seq, T, n_heads,
                              head_dim, scale, rel, qkv_scratch, out, pool);
  matmul(w_qkv, x, rows, qkv_scratch, pool, precision, b_qkv);
  dense_attention(qkv_scratch, n_seq, T, n_heads, head_dim, scale, rel, out, pool, precision);
}

void qkv_attention(const TensorView& w_qkv, const float* b_qkv, const NormedRows& in, int64_t n_seq, int64_t T,
                   int64_t n_heads, int64_t head_dim, float scale, const RelPos2D* rel, float* qkv_scratch, float* out,
                   ThreadPool& pool, GemmPrecision precision) {
  const int64_t rows = n_seq * T;
  if (matmul_takes_bf16_gemm(w_qkv, rows, precision))
    return qkv_attention_bf16(w_qkv, b_qkv, in.pack(rows, pool), n_seq, T, n_heads, head_dim, scale, rel, qkv_scratch,
                              out, pool);
  in.write(rows, out, pool);
  qkv_attention(w_qkv, b_qkv, out, n_seq, T, n_heads, head_dim, scale, rel, qkv_scratch, out, pool, precision);
}

void dense_attention(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                     const RelPos2D* rel, float* out, ThreadPool& pool, GemmPrecision precision) {
  make_blas_single_threaded();
  check_attention(n_seq, T, n_heads, head_dim, rel);
  if (precision == GemmPrecision::Bf16 && bf16_gemm_supported()) {
    detail::dense_attention_bf16(qkv, n_seq, T, n_heads, head_dim, scale, rel, out, pool);
    return;
  }
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t D = n_heads * head_dim, ld = 3 * D, d = head_dim;
  const int64_t q_blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = n_seq * n_heads * q_blocks;
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores, relh, relw;
    scores.resize(static_cast<size_t>(kQueryBlock * T));
    if (rel) {
      relh.resize(static_cast<size_t>(kQueryBlock * (2 * rel->side_h - 1)));
      relw.resize(static_cast<size_t>(kQueryBlock * (2 * rel->side_w - 1)));
    }
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / (n_heads * q_blocks);
      const int64_t h = (task / q_blocks) % n_heads;
      const int64_t q0 = (task % q_blocks) * kQueryBlock;
      const int64_t nq = std::min(kQueryBlock, T - q0);
      const float* base = qkv + s * T * ld;
      const float* Q = base + q0 * ld + h * d;
      float* S = scores.data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(T),
                  static_cast<blasint>(d), scale, Q, static_cast<blasint>(ld), base + D + h * d,
                  static_cast<blasint>(ld), 0.0f, S, static_cast<blasint>(T));
      if (rel) {
        project_on_table(Q, ld, nq, d, rel->table_h, rel->side_h, relh.data());
        project_on_table(Q, ld, nq, d, rel->table_w, rel->side_w, relw.data());
      }
      for (int64_t i = 0; i < nq; ++i) {
        float* row = S + i * T;
        if (rel)
          add_relative_positions(*rel, q0 + i, relh.data() + i * (2 * rel->side_h - 1),
                                 relw.data() + i * (2 * rel->side_w - 1), row);
        // Softmax with the vectorised exp of the ISA table (T^2 exps per head: the SAM global blocks
        // of a 1024 view take 16.8 M per head).
        const float inv = static_cast<float>(1.0 / table.exp_sum(row, T, detail::row_max(row, T)));
        for (int64_t j = 0; j < T; ++j) row[j] *= inv;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(nq), static_cast<blasint>(d),
                  static_cast<blasint>(T), 1.0f, S, static_cast<blasint>(T), base + 2 * D + h * d,
                  static_cast<blasint>(ld), 0.0f, out + (s * T + q0) * D + h * d, static_cast<blasint>(D));
    }
  });
}

}  // namespace folio::kernels
