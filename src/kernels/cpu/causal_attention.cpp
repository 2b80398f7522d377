#include "kernels/cpu/causal_attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/row_max.h"
#include "kernels/cpu/kv_quant.h"

namespace folio::kernels {

namespace {

// Parallelism is ours (one sgemm per pool thread at a time), as in matmul.cpp.
void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// Rows [0, rows) of KV head `kvh`, keys or values, as f32 [rows, hd] in dst.
void head_to_f32(std::span<const KVSpan> spans, int64_t kvh, int64_t hd, bool values, int64_t rows, float* dst,
                 const detail::KernelTable& table) {
  int64_t r = 0;
  for (const KVSpan& s : spans) {
    if (r >= rows) break;
    const int64_t take = std::min(s.tokens, rows - r);
    const KVDType t = values ? s.v_type : s.k_type;
    const size_t rb = kv_row_bytes(t, hd);
    const uint8_t* base = head_rows(s, static_cast<size_t>(kvh), values);
    float* out = dst + r * hd;
    if (!kv_quantized(t)) {
      table.to_f32[static_cast<int>(kv_float_dtype(t))](base, rb, hd, take, out);
    } else if (values) {
      dequantize_token_rows(t, base, rb, s.v_params, s.v_param_stride, kvh * hd / s.v_group, s.v_group, take, hd, out);
    } else if (s.k_param_stride) {
      dequantize_token_rows(t, base, rb, s.k_params, s.k_param_stride, kvh * hd / s.k_group, s.k_group, take, hd, out);
    } else {
      dequantize_key_rows(t, base, s.k_params + kvh * kv_params_per_group(t) * hd, take, hd, out);
    }
    r += take;
  }
}

// One (head, query block): nq queries at positions p0.. p0 + nq - 1 (rows of Q `ldq` apart) over
// key rows 0..p0 + nq - 1 of K / V (f32, [rows, hd]). Writes the normalised output rows `ldo` apart.
struct BlockScratch {
  std::vector<float> s, o, m, l;
};

void causal_block(const float* Q, int64_t ldq, int64_t nq, int64_t p0, const float* K, const float* V, int64_t hd, float scale,
                  float* out, int64_t ldo, BlockScratch& w, const detail::KernelTable& table) {
  w.s.resize(static_cast<size_t>(kCausalQueryBlock * kCausalKeyTile));
  w.o.assign(static_cast<size_t>(nq * hd), 0.f);
  w.m.assign(static_cast<size_t>(nq), -INFINITY);
  w.l.assign(static_cast<size_t>(nq), 0.f);
  const int64_t keys = p0 + nq;
  for (int64_t k0 = 0; k0 < keys; k0 += kCausalKeyTile) {
    const int64_t nk = std::min(kCausalKeyTile, keys - k0);
    float* S = w.s.data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nq), static_cast<blasint>(nk),
                static_cast<blasint>(hd), scale, Q, static_cast<blasint>(ldq), K + k0 * hd, static_cast<blasint>(hd), 0.0f, S,
                static_cast<blasint>(kCausalKeyTile));
    for (int64_t i = 0; i < nq; ++i) {
      float* row = S + i * kCausalKeyTile;
      const int64_t valid = std::min(nk, p0 + i - k0 + 1);
      if (valid <= 0) {  // the tile starts after this query: it contributes nothing
        std::fill(row, row + nk, 0.f);
        continue;
      }
      const float mx = std::max(w.m[i], detail::row_max(row, valid));
      const float alpha = std::exp(w.m[i] - mx);
      const double sum = table.exp_sum(row, valid, mx);
      std::fill(row + valid, row + nk, 0.f);
      w.l[i] = w.l[i] * alpha + static_cast<float>(sum);
      w.m[i] = mx;
      if (alpha != 1.f)
        for (int64_t c = 0; c < hd; ++c) w.o[i * hd + c] *= alpha;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(nq), static_cast<blasint>(hd),
                static_cast<blasint>(nk), 1.0f, S, static_cast<blasint>(kCausalKeyTile), V + k0 * hd, static_cast<blasint>(hd), 1.0f,
                w.o.data(), static_cast<blasint>(hd));
  }
  for (int64_t i = 0; i < nq; ++i) {
    const float inv = w.l[i] > 0 ? 1.f / w.l[i] : 0.f;
    for (int64_t c = 0; c < hd; ++c) out[i * ldo + c] = w.o[i * hd + c] * inv;
  }
}

}  // namespace

void attend_causal(const float* q, int64_t n, int64_t first, std::span<const KVSpan> spans, const AttentionShape& shape,
                   float* out, ThreadPool& pool) {
  int64_t total = 0;
  for (const KVSpan& s : spans) total += s.tokens;
  FOLIO_CHECK_INPUT(n >= 0 && first >= 0 && total >= first + n,
                    "attend_causal: " + std::to_string(total) + " cached rows for queries up to position " +
                        std::to_string(first + n - 1));
  if (n == 0) return;
  make_blas_single_threaded();
  const detail::KernelTable& table = detail::table_for(active_isa());
  const int64_t nh = shape.n_heads, hd = shape.head_dim, group = nh / shape.n_kv_heads, D = nh * hd;
  const int64_t rows = first + n, blocks = (n + kCausalQueryBlock - 1) / kCausalQueryBlock;
  // Tasks in KV-head order, so a thread converts each KV head it meets once.
  pool.parallel_for(nh * blocks, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> kf, vf;
    thread_local BlockScratch w;
    int64_t converted = -1;
    kf.resize(static_cast<size_t>(rows * hd));
    vf.resize(static_cast<size_t>(rows * hd));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t h = task / blocks, b = task % blocks, kvh = h / group;
      if (kvh != converted) {
        head_to_f32(spans, kvh, hd, false, rows, kf.data(), table);
        head_to_f32(spans, kvh, hd, true, rows, vf.data(), table);
        converted = kvh;
      }
      const int64_t q0 = b * kCausalQueryBlock, nq = std::min(kCausalQueryBlock, n - q0);
      causal_block(q + q0 * D + h * hd, D, nq, first + q0, kf.data(), vf.data(), hd, shape.scale, out + q0 * D + h * hd, D, w,
                   table);
    }
  });
}

}  // namespace folio::kernels
