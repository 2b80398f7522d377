#include "kernels/cpu/dense_attention.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/bf16_gemm.h"
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

// Relative-position terms of nq queries (rows of Q `ld` apart): dst [nq, 2 * side - 1] =
// Q . table^T, one sgemm; entry (i, j) is <q_i, table row j>.
void project_on_table(const float* Q, int64_t ld, int64_t nq, int64_t d, const float* table, int64_t side, float* dst) {
  const int64_t L = 2 * side - 1;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(L),
              static_cast<blasint>(d), 1.0f, Q, static_cast<blasint>(ld), table, static_cast<blasint>(d), 0.0f, dst,
              static_cast<blasint>(L));
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

// The two products of a block of query rows with one head's keys and values: in f32 with sgemm, or in
// bf16 (bf16_gemm.h) over each head's K and V^T packed once, before the blocks run.
class HeadProducts {
 public:
  HeadProducts(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t d, bool bf16, ThreadPool& pool)
      : qkv_(qkv), T_(T), H_(n_heads), d_(d), D_(n_heads * d), ld_(3 * n_heads * d), bf16_(bf16) {
    if (!bf16_) return;
    k_.resize(static_cast<size_t>(n_seq * H_));
    vt_.resize(k_.size());
    pool.parallel_for(n_seq * H_, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        pack_bf16_weights(key(i / H_, i % H_), T_, d_, ld_, 1, k_[static_cast<size_t>(i)]);
        pack_bf16_weights(value(i / H_, i % H_), d_, T_, 1, ld_, vt_[static_cast<size_t>(i)]);
      }
    });
  }

  // S [nq, T] = scale * Q . K^T for nq query rows Q (ld apart) of sequence s, head h.
  void scores(int64_t s, int64_t h, const float* Q, int64_t nq, float scale, float* S) const {
    if (!bf16_) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(T_),
                  static_cast<blasint>(d_), scale, Q, static_cast<blasint>(ld_), key(s, h), static_cast<blasint>(ld_), 0.0f,
                  S, static_cast<blasint>(T_));
      return;
    }
    thread_local Bf16Activations q;
    q.assign(Q, nq, d_, ld_);
    bf16_gemm(q, k_[static_cast<size_t>(s * H_ + h)].data(), T_, S, T_);
    for (int64_t i = 0; i < nq * T_; ++i) S[i] *= scale;
  }

  // out [nq, d] (rows ldo apart) = P [nq, T] . V of sequence s, head h.
  void weighted_sum(int64_t s, int64_t h, const float* P, int64_t nq, float* out, int64_t ldo) const {
    if (!bf16_) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(nq), static_cast<blasint>(d_),
                  static_cast<blasint>(T_), 1.0f, P, static_cast<blasint>(T_), value(s, h), static_cast<blasint>(ld_), 0.0f,
                  out, static_cast<blasint>(ldo));
      return;
    }
    thread_local Bf16Activations p;
    p.assign(P, nq, T_, T_);
    bf16_gemm(p, vt_[static_cast<size_t>(s * H_ + h)].data(), d_, out, ldo);
  }

 private:
  const float* key(int64_t s, int64_t h) const { return qkv_ + s * T_ * ld_ + D_ + h * d_; }
  const float* value(int64_t s, int64_t h) const { return qkv_ + s * T_ * ld_ + 2 * D_ + h * d_; }

  const float* qkv_;
  int64_t T_, H_, d_, D_, ld_;
  bool bf16_;
  std::vector<std::vector<uint32_t>> k_, vt_;  // per (sequence, head), when bf16_
};

}  // namespace

void dense_attention(const float* qkv, int64_t n_seq, int64_t T, int64_t n_heads, int64_t head_dim, float scale,
                     const RelPos2D* rel, float* out, ThreadPool& pool, GemmPrecision precision) {
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
  const bool bf16 = precision == GemmPrecision::Bf16 && bf16_gemm_supported();
  const HeadProducts products(qkv, n_seq, T, n_heads, d, bf16, pool);
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
      products.scores(s, h, Q, nq, scale, S);
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
      products.weighted_sum(s, h, S, nq, out + (s * T + q0) * D + h * d, D);
    }
  });
}

}  // namespace folio::kernels
