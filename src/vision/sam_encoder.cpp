#include "vision/sam_encoder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/dense_attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/resize.h"

namespace folio {

namespace {

// The MLP runs over this many tokens at a time (whole panels of the bf16 GEMM's activation rows):
// a 1024 view's 4,096 tokens in four, each one's hidden layer (6 MiB of bf16) still in the L3 when
// lin2 reads it, where the whole map's 24 MiB went out to memory and back. Each chunk packs the
// weights again, which costs less than that trip (docs/benchmarks.md, "Second pass at item 4").
constexpr int64_t kMlpRows = 74 * kernels::kBf16PanelRows;

}  // namespace

SamEncoder::SamEncoder(const VisionConfig& cfg, VisionWeights& W, const std::string& p) : cfg_(cfg) {
  cfg_.validate();
  const int64_t D = cfg_.sam_width, hd = cfg_.sam_head_dim(), k = cfg_.sam_patch;
  pos_side_ = cfg_.sam_image / cfg_.sam_patch;
  patch_.emplace(W.tensor(p + "patch_embed.proj.weight", {D, 3, k, k}), 3);
  patch_b_ = W.f32(p + "patch_embed.proj.bias", {D});
  pos_ = W.f32(p + "pos_embed", {1, pos_side_, pos_side_, D});
  for (int64_t i = 0; i < cfg_.sam_layers; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    Block B;
    B.global = cfg_.sam_is_global(i);
    B.norm1_w = W.f32(b + "norm1.weight", {D});
    B.norm1_b = W.f32(b + "norm1.bias", {D});
    B.norm2_w = W.f32(b + "norm2.weight", {D});
    B.norm2_b = W.f32(b + "norm2.bias", {D});
    B.qkv = &W.tensor(b + "attn.qkv.weight", {3 * D, D});
    B.qkv_b = W.f32(b + "attn.qkv.bias", {3 * D});
    B.proj = &W.tensor(b + "attn.proj.weight", {D, D});
    B.proj_b = W.f32(b + "attn.proj.bias", {D});
    // Windowed blocks were trained on window x window sequences, global ones on the whole grid.
    const int64_t L = 2 * (B.global ? pos_side_ : cfg_.sam_window) - 1;
    B.rel_h = W.f32(b + "attn.rel_pos_h", {L, hd});
    B.rel_w = W.f32(b + "attn.rel_pos_w", {L, hd});
    B.lin1 = &W.tensor(b + "mlp.lin1.weight", {cfg_.sam_mlp, D});
    B.lin1_b = W.f32(b + "mlp.lin1.bias", {cfg_.sam_mlp});
    B.lin2 = &W.tensor(b + "mlp.lin2.weight", {D, cfg_.sam_mlp});
    B.lin2_b = W.f32(b + "mlp.lin2.bias", {D});
    blocks_.push_back(std::move(B));
  }
  const int64_t N = cfg_.sam_neck;
  neck0_.emplace(W.tensor(p + "neck.0.weight", {N, D, 1, 1}), D);
  neck1_w_ = W.f32(p + "neck.1.weight", {N});
  neck1_b_ = W.f32(p + "neck.1.bias", {N});
  neck2_.emplace(W.tensor(p + "neck.2.weight", {N, N, 3, 3}), N);
  neck3_w_ = W.f32(p + "neck.3.weight", {N});
  neck3_b_ = W.f32(p + "neck.3.bias", {N});
  int64_t in = N;
  for (size_t i = 0; i < cfg_.sam_downsample.size(); ++i) {
    const int64_t out = cfg_.sam_downsample[i];
    down_.emplace_back(W.tensor(p + "net_" + std::to_string(i + 2) + ".weight", {out, in, 3, 3}), in);
    in = out;
  }
}

int64_t SamEncoder::output_side(int64_t size) const {
  int64_t g = size / cfg_.sam_patch;
  for (size_t i = 0; i < down_.size(); ++i) g = kernels::conv_out_size(g, 3, 2, 1);
  return g;
}

const std::vector<float>& SamEncoder::pos_table(int64_t G) const {
  if (G == pos_side_) return pos_;
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = pos_cache_.find(G);
  if (it != pos_cache_.end()) return it->second;
  std::vector<float> t(static_cast<size_t>(G * G * cfg_.sam_width));
  kernels::resize_bicubic_aa_hwc(pos_.data(), pos_side_, pos_side_, cfg_.sam_width, t.data(), G, G);
  return pos_cache_.emplace(G, std::move(t)).first->second;
}

const std::vector<float>& SamEncoder::rel_table(int64_t block, bool height, int64_t s) const {
  const Block& B = blocks_[static_cast<size_t>(block)];
  const std::vector<float>& base = height ? B.rel_h : B.rel_w;
  const int64_t hd = cfg_.sam_head_dim(), L = static_cast<int64_t>(base.size()) / hd, M = 2 * s - 1;
  if (L == M) return base;
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto key = std::make_tuple(block, height, s);
  auto it = rel_cache_.find(key);
  if (it != rel_cache_.end()) return it->second;
  std::vector<float> t(static_cast<size_t>(M * hd));
  kernels::resize_linear_rows(base.data(), L, hd, t.data(), M);
  return rel_cache_.emplace(key, std::move(t)).first->second;
}

void SamEncoder::run_block(int64_t index, float* x, int64_t G, BlockBuffers& buf, ThreadPool& pool) const {
  const Block& B = blocks_[static_cast<size_t>(index)];
  const int64_t D = cfg_.sam_width, T = G * G, H = cfg_.sam_heads, hd = cfg_.sam_head_dim();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  float *y = buf.y.data(), *qkv = buf.qkv.data(), *att = buf.att.data();
  kernels::NormedRows norm1{x, B.norm1_w.data(), B.norm1_b.data(), cfg_.sam_eps, D};

  if (B.global) {
    kernels::RelPos2D rel{rel_table(index, true, G).data(), rel_table(index, false, G).data(), G, G};
    kernels::qkv_attention(*B.qkv, B.qkv_b.data(), norm1, 1, T, H, hd, scale, &rel, qkv, att, pool, precision_);
    kernels::linear(*B.proj, B.proj_b.data(), att, T, y, pool, precision_);
    kernels::add_inplace(x, y, T * D, pool);
  } else {
    // The normalised map in windows, padded with zero tokens at the bottom/right to whole windows
    // (buf.window_rows); the padding tokens go through qkv (so their keys/values are the bias)
    // and are attended to, unmasked.
    const int64_t ws = cfg_.sam_window, nw = (G + ws - 1) / ws, Tw = ws * ws, rows = nw * nw * Tw;
    norm1.map = buf.window_rows.data();
    kernels::RelPos2D rel{rel_table(index, true, ws).data(), rel_table(index, false, ws).data(), ws, ws};
    kernels::qkv_attention(*B.qkv, B.qkv_b.data(), norm1, nw * nw, Tw, H, hd, scale, &rel, qkv, att, pool, precision_);
    // The projection of the windows goes to qkv, whose contents are spent.
    kernels::linear(*B.proj, B.proj_b.data(), att, rows, qkv, pool, precision_);
    pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        if (const int64_t t = buf.window_rows[static_cast<size_t>(r)]; t >= 0) kernels::add_inplace(x + t * D, qkv + r * D, D);
    });
  }

  for (int64_t r0 = 0; r0 < T; r0 += kMlpRows) {
    const int64_t n = std::min(kMlpRows, T - r0);
    float* xr = x + r0 * D;
    const kernels::NormedRows norm2{xr, B.norm2_w.data(), B.norm2_b.data(), cfg_.sam_eps, D};
    kernels::mlp(*B.lin1, B.lin1_b.data(), kernels::Activation::GeluErf, *B.lin2, B.lin2_b.data(), norm2, n, y,
                 buf.hidden, pool, precision_);
    kernels::add_inplace(xr, y, n * D, pool);
  }
}

SamEncoder::Output SamEncoder::forward(const float* pixels, int64_t size, ThreadPool& pool) const {
  FOLIO_CHECK_INPUT(size > 0 && size % cfg_.sam_patch == 0,
                    "SAM input size " + std::to_string(size) + " is not a positive multiple of the patch size " +
                        std::to_string(cfg_.sam_patch));
  const int64_t D = cfg_.sam_width, G = size / cfg_.sam_patch, T = G * G;
  // Patch embedding as a stride-16 convolution on the HWC image.
  std::vector<float> hwc(static_cast<size_t>(size * size * 3));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < size * size; ++i) hwc[static_cast<size_t>(i * 3 + c)] = pixels[c * size * size + i];
  std::vector<float> x(static_cast<size_t>(T * D));
  kernels::conv2d_hwc(hwc.data(), size, size, 3, *patch_, patch_b_.data(), cfg_.sam_patch, cfg_.sam_patch, 0, x.data(), pool,
                      precision_);
  hwc = {};
  kernels::add_inplace(x.data(), pos_table(G).data(), T * D);

  {
    const int64_t ws = cfg_.sam_window, nw = (G + ws - 1) / ws, rows = std::max(T, nw * nw * ws * ws);
    BlockBuffers buf;
    // Window row r holds token window_rows[r] of the map, or padding (-1).
    buf.window_rows.assign(static_cast<size_t>(nw * nw * ws * ws), -1);
    for (int64_t gy = 0; gy < G; ++gy)
      for (int64_t gx = 0; gx < G; ++gx)
        buf.window_rows[static_cast<size_t>(((gy / ws) * nw + gx / ws) * ws * ws + (gy % ws) * ws + gx % ws)] = gy * G + gx;
    buf.y.resize(static_cast<size_t>(T * D));
    buf.qkv.resize(static_cast<size_t>(rows * 3 * D));
    buf.att.resize(static_cast<size_t>(rows * D));
    for (int64_t i = 0; i < cfg_.sam_layers; ++i) run_block(i, x.data(), G, buf, pool);
  }

  const int64_t N = cfg_.sam_neck;
  std::vector<float> a(static_cast<size_t>(T * N)), b(static_cast<size_t>(T * N));
  kernels::conv2d_hwc(x.data(), G, G, D, *neck0_, nullptr, 1, 1, 0, a.data(), pool, precision_);
  x = {};
  kernels::layer_norm(a.data(), neck1_w_.data(), neck1_b_.data(), a.data(), T, N, cfg_.sam_eps, pool);
  kernels::conv2d_hwc(a.data(), G, G, N, *neck2_, nullptr, 1, 1, 1, b.data(), pool, precision_);
  kernels::layer_norm(b.data(), neck3_w_.data(), neck3_b_.data(), b.data(), T, N, cfg_.sam_eps, pool);

  Output out;
  out.tokens = std::move(b);
  out.side = G;
  out.channels = N;
  for (const kernels::ConvFilter& w : down_) {
    const int64_t g2 = kernels::conv_out_size(out.side, 3, 2, 1), C = w.out_channels();
    std::vector<float> next(static_cast<size_t>(g2 * g2 * C));
    kernels::conv2d_hwc(out.tokens.data(), out.side, out.side, out.channels, w, nullptr, 2, 2, 1, next.data(), pool,
                        precision_);
    out.tokens = std::move(next);
    out.side = g2;
    out.channels = C;
  }
  return out;
}

}  // namespace folio
