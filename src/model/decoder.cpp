#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <string>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/causal_attention.h"
#include "kernels/cpu/hadamard.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "model/weight_names.h"

namespace folio {

namespace {

// A reference run of at least this many tokens attends as matrix products (kernels::attend_causal);
// a shorter one, one query at a time (it reads little, and short prompts keep their exact numbers).
constexpr int64_t kCausalRunMinTokens = 64;

// Grows v to at least n elements, never shrinks it: buffers kept between calls (MoeScratch,
// RunState) hold the largest batch their thread has run.
void grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

// The tokens one routed expert (or the shared experts) computes, with their routing weights, and
// its slices of MoeScratch.
struct ExpertWork {
  const TensorView *gate = nullptr, *up = nullptr, *down = nullptr;
  std::vector<int64_t> tokens;
  std::vector<float> weights;
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
  int64_t width() const { return gate->shape[0]; }
  float *xs = nullptr, *g = nullptr, *u = nullptr, *ys = nullptr;
};

// Everything a MoE layer needs per call, kept by the calling thread and grown, never shrunk: work
// holds one entry per routed expert and a last one for the shared experts.
struct MoeScratch {
  std::vector<float> probs, xs, g, u, ys;
  std::vector<ExpertWork> work;
  std::vector<ExpertWork*> active;
  std::vector<int64_t> order;
  std::vector<kernels::MatmulJob> jobs;
};

// Router: softmax over all experts of each token's logits (s.probs, [n, n_routed], overwritten),
// then the top-k by probability (greedy; ties to the lower index), into s.work[0, n_routed).
void route_tokens(const ModelConfig& cfg, int64_t n, MoeScratch& s) {
  const int64_t E = cfg.n_routed, K = cfg.top_k;
  s.work.resize(static_cast<size_t>(E + 1));
  for (ExpertWork& w : s.work) {
    w.tokens.clear();
    w.weights.clear();
  }
  std::vector<ExpertWork>& work = s.work;
  std::vector<int64_t>& order = s.order;
  order.resize(static_cast<size_t>(E));
  float* probs = s.probs.data();
  for (int64_t t = 0; t < n; ++t) {
    float* p = probs + t * E;
    kernels::softmax(p, E);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float denom = 0.f;
    for (int64_t i = 0; i < K; ++i) denom += p[order[static_cast<size_t>(i)]];
    for (int64_t i = 0; i < K; ++i) {
      int64_t e = order[static_cast<size_t>(i)];
      // Renormalised over the chosen experts only when configured (the published model does not);
      // routed scaling applies either way, as in the official MoEGate.
      float w = (cfg.norm_topk_prob && K > 1 ? p[e] / (denom + 1e-20f) : p[e]) * cfg.routed_scaling;
      work[static_cast<size_t>(e)].tokens.push_back(t);
      work[static_cast<size_t>(e)].weights.push_back(w);
    }
  }
}

// Gives each expert its slices of the scratch buffers and gathers its input rows from x [n, H].
void place_experts(std::span<ExpertWork* const> active, const float* x, int64_t H, MoeScratch& s) {
  int64_t rows = 0, hidden = 0;
  for (const ExpertWork* w : active) {
    rows += w->rows();
    hidden += w->rows() * w->width();
  }
  for (auto* v : {&s.xs, &s.ys}) grow(*v, rows * H);
  for (auto* v : {&s.g, &s.u}) grow(*v, hidden);
  int64_t row = 0, h = 0;
  for (ExpertWork* w : active) {
    w->xs = s.xs.data() + row * H;
    w->ys = s.ys.data() + row * H;
    w->g = s.g.data() + h;
    w->u = s.u.data() + h;
    row += w->rows();
    h += w->rows() * w->width();
    for (int64_t i = 0; i < w->rows(); ++i) std::copy_n(x + w->tokens[static_cast<size_t>(i)] * H, H, w->xs + i * H);
  }
}

// silu(gate) * up into gate, split over the pool: element by element, so the same bits for any
// split; on one thread it was a few percent of a decode step (a libm exp per element).
void silu_mul_on(ThreadPool& pool, float* gate, const float* up, int64_t n) {
  constexpr int64_t kGrain = 1024;
  pool.parallel_for(n, [&](int64_t b, int64_t e) { kernels::silu_mul(gate + b, up + b, gate + b, e - b); }, kGrain);
}

// All gate/up products in one pass over the weights, then all down products in another.
void run_experts(std::span<ExpertWork* const> active, std::vector<kernels::MatmulJob>& jobs, ThreadPool& pool,
                 kernels::GemmPrecision precision) {
  jobs.clear();
  for (ExpertWork* w : active) {
    jobs.push_back({w->gate, w->xs, w->rows(), w->g});
    jobs.push_back({w->up, w->xs, w->rows(), w->u});
  }
  kernels::matmul_many(jobs, pool, precision);
  jobs.clear();
  int64_t hidden = 0;  // place_experts lays the experts' gate and up rows end to end
  for (ExpertWork* w : active) {
    hidden += w->rows() * w->width();
    jobs.push_back({w->down, w->g, w->rows(), w->ys});
  }
  silu_mul_on(pool, active.front()->g, active.front()->u, hidden);
  kernels::matmul_many(jobs, pool, precision);
}

}  // namespace

const TensorView* Decoder::need(const std::string& name, std::vector<int64_t> shape) {
  const TensorView& t = src_.get(name, shape);
  if (t.cols() % dtype_block_elems(t.dtype) != 0)
    throw_invalid("tensor '" + name + "': " + dtype_name(t.dtype) + " rows must be multiples of " +
                  std::to_string(dtype_block_elems(t.dtype)));
  used_.insert(name);
  params_ += t.numel();
  weight_bytes_ += t.nbytes();
  return &t;
}

Decoder::Decoder(ModelConfig config, const TensorSource& weights, WeightNaming naming)
    : cfg_(std::move(config)), src_(weights), naming_(naming), rope_(cfg_.head_dim, cfg_.rope_theta) {
  cfg_.validate();
  const int64_t H = cfg_.hidden, hd = cfg_.head_dim;
  embed_ = need(global_tensor_name(naming, "embed"), {cfg_.vocab, H});
  final_norm_ = to_f32_vector(*need(global_tensor_name(naming, "norm"), {H}));
  lm_head_ = cfg_.tie_embeddings ? embed_ : need(global_tensor_name(naming, "lm_head"), {cfg_.vocab, H});
  layers_.resize(static_cast<size_t>(cfg_.n_layers));
  for (int64_t l = 0; l < cfg_.n_layers; ++l) {
    Layer& L = layers_[static_cast<size_t>(l)];
    auto name = [&](const std::string& what) { return layer_tensor_name(naming, l, what); };
    L.attn_norm = to_f32_vector(*need(name("input_layernorm"), {H}));
    L.ffn_norm = to_f32_vector(*need(name("post_attention_layernorm"), {H}));
    L.wq = need(name("self_attn.q_proj"), {cfg_.n_heads * hd, H});
    L.wk = need(name("self_attn.k_proj"), {cfg_.n_kv_heads * hd, H});
    L.wv = need(name("self_attn.v_proj"), {cfg_.n_kv_heads * hd, H});
    L.wo = need(name("self_attn.o_proj"), {H, cfg_.n_heads * hd});
    L.moe = cfg_.is_moe_layer(l);
    auto load_mlp = [&](const std::string& prefix, int64_t width) {
      Mlp m;
      m.gate = need(name(prefix + "gate_proj"), {width, H});
      m.up = need(name(prefix + "up_proj"), {width, H});
      m.down = need(name(prefix + "down_proj"), {H, width});
      return m;
    };
    if (!L.moe) {
      L.dense = load_mlp("mlp.", cfg_.intermediate);
      continue;
    }
    L.router = need(name("mlp.gate"), {cfg_.n_routed, H});
    for (int64_t e = 0; e < cfg_.n_routed; ++e) L.experts.push_back(load_mlp("mlp.experts." + std::to_string(e) + ".", cfg_.moe_intermediate));
    if (cfg_.n_shared > 0) L.shared = load_mlp("mlp.shared_experts.", cfg_.moe_intermediate * cfg_.n_shared);
  }
  active_weight_bytes_ = count_active_weight_bytes();
  // A tensor nobody asked for means the checkpoint and the config disagree (wrong layer count, a
  // different architecture): refuse rather than silently ignore weights. Vision-tower tensors of
  // OCR checkpoints (and the mini OCR models' front ends: "mini_ocr.*", "recognizer.*", "structure.*") belong
  // to the encoder and are expected.
  static const char* kOtherParts[] = {"model.sam_model.", "model.vision_model.", "model.projector.", "model.image_newline",
                                      "model.view_seperator", "rope_freqs.weight", "mini_ocr.", "recognizer.",
                                      "structure."};
  for (const std::string& n : src_.names()) {
    if (used_.count(n)) continue;
    bool other = false;
    for (const char* p : kOtherParts) other = other || n.rfind(p, 0) == 0 || n.find(".rotary_emb.inv_freq") != std::string::npos;
    if (!other) throw_invalid("unexpected tensor '" + n + "' in " + src_.description() + " (not part of a " + cfg_.arch_name() +
                              " decoder with this config)");
  }
}

void Decoder::set_context(int64_t positions) {
  if (positions < 1) throw_invalid("context must be at least 1 position, got " + std::to_string(positions));
  cfg_.max_positions = positions;
}

namespace {
// Weight bytes of one MLP (a read of each of its three matrices).
size_t mlp_bytes(const TensorView* gate, const TensorView* up, const TensorView* down) {
  return gate->nbytes() + up->nbytes() + down->nbytes();
}
}  // namespace

size_t Decoder::count_active_weight_bytes() const {
  size_t b = lm_head_->nbytes() + embed_->row_bytes();
  for (const Layer& L : layers_) {
    b += L.wq->nbytes() + L.wk->nbytes() + L.wv->nbytes() + L.wo->nbytes();
    auto mlp_total = [](const Mlp& m) { return mlp_bytes(m.gate, m.up, m.down); };
    if (!L.moe) {
      b += mlp_total(L.dense);
      continue;
    }
    b += L.router->nbytes() + static_cast<size_t>(cfg_.top_k) * mlp_total(L.experts[0]);
    if (L.shared.gate) b += mlp_total(L.shared);
  }
  return b;
}

int64_t Decoder::prefill_params_per_token() const {
  int64_t n = 0;
  auto mlp = [](const Mlp& m) { return m.gate->numel() + m.up->numel() + m.down->numel(); };
  for (const Layer& L : layers_) {
    n += L.wq->numel() + L.wk->numel() + L.wv->numel() + L.wo->numel();
    if (!L.moe) {
      n += mlp(L.dense);
      continue;
    }
    n += L.router->numel() + cfg_.top_k * mlp(L.experts[0]);
    if (L.shared.gate) n += mlp(L.shared);
  }
  return n;
}

void Decoder::embed(int32_t token, float* out) const {
  if (token < 0 || token >= cfg_.vocab) throw_invalid("token id " + std::to_string(token) + " is outside the vocabulary of " + std::to_string(cfg_.vocab));
  convert_to_f32(embed_->dtype, embed_->row_ptr(token), out, cfg_.hidden);
}

Decoder::RunState& Decoder::run_state(int64_t rows, int64_t inputs) const {
  // Kept by the calling thread (split_by_sequence runs parts of a batch on pool threads at once).
  thread_local RunState st;
  const int64_t H = cfg_.hidden, qd = cfg_.n_heads * cfg_.head_dim, kvd = cfg_.n_kv_heads * cfg_.head_dim;
  for (auto* v : {&st.x, &st.xn, &st.y}) grow(*v, rows * H);
  for (auto* v : {&st.q, &st.att}) grow(*v, rows * qd);
  for (auto* v : {&st.k, &st.v}) grow(*v, rows * kvd);
  grow(st.last, inputs * H);
  return st;
}

size_t Decoder::mlp(const Mlp& m, const float* x, int64_t n, float* y, ThreadPool& pool) {
  const int64_t w = m.gate->shape[0];
  thread_local std::vector<float> g, u;  // kept between calls, as the run state is
  grow(g, n * w);
  grow(u, n * w);
  const kernels::MatmulJob gate_up[] = {{m.gate, x, n, g.data()}, {m.up, x, n, u.data()}};
  kernels::matmul_many(gate_up, pool, prefill_precision_);
  silu_mul_on(pool, g.data(), u.data(), n * w);
  kernels::matmul(*m.down, g.data(), n, y, pool, prefill_precision_);
  return mlp_bytes(m.gate, m.up, m.down);
}

size_t Decoder::moe(const Layer& L, const float* x, int64_t n, float* y, ThreadPool& pool) {
  // Activations of the experts, kept between calls on the calling thread: fresh buffers per layer
  // cost page faults and zeroing (5% of a long prefill).
  thread_local MoeScratch s;
  grow(s.probs, n * cfg_.n_routed);
  // The router stays in f32 whatever the prefill precision: it is a sliver of the work, and a
  // rounded score could send a token to other experts.
  kernels::matmul(*L.router, x, n, s.probs.data(), pool);
  route_tokens(cfg_, n, s);
  // Shared experts see every token; routed experts see the tokens that chose them.
  s.active.clear();
  for (int64_t e = 0; e < cfg_.n_routed; ++e) {
    ExpertWork& w = s.work[static_cast<size_t>(e)];
    if (w.tokens.empty()) continue;
    const Mlp& m = L.experts[static_cast<size_t>(e)];
    w.gate = m.gate, w.up = m.up, w.down = m.down;
    s.active.push_back(&w);
  }
  ExpertWork& shared = s.work.back();
  if (L.shared.gate) {
    shared.gate = L.shared.gate, shared.up = L.shared.up, shared.down = L.shared.down;
    shared.tokens.resize(static_cast<size_t>(n));
    std::iota(shared.tokens.begin(), shared.tokens.end(), 0);
    s.active.push_back(&shared);
  }
  place_experts(s.active, x, cfg_.hidden, s);
  run_experts(s.active, s.jobs, pool, prefill_precision_);
  if (L.shared.gate) std::copy_n(shared.ys, n * cfg_.hidden, y);
  else std::fill(y, y + n * cfg_.hidden, 0.f);
  size_t streamed = L.router->nbytes();
  for (ExpertWork* w : s.active) {
    streamed += mlp_bytes(w->gate, w->up, w->down);
    if (w == &shared) continue;
    for (size_t i = 0; i < w->tokens.size(); ++i) {
      float* dst = y + w->tokens[i] * cfg_.hidden;
      const float* src = w->ys + static_cast<int64_t>(i) * cfg_.hidden;
      for (int64_t j = 0; j < cfg_.hidden; ++j) dst[j] += w->weights[i] * src[j];
    }
  }
  return streamed;
}

void Decoder::attend_tasks(const AttentionStep& st, std::span<const AttentionTask> tasks, ThreadPool& pool) const {
  const int64_t nh = cfg_.n_heads, hd = cfg_.head_dim, group = nh / cfg_.n_kv_heads;
  int64_t max_rows = 0;
  for (const AttentionTask& t : tasks) max_rows = std::max(max_rows, t.pos + 1);
  const int64_t total = static_cast<int64_t>(tasks.size()) * nh;
  const int64_t nthreads = std::min<int64_t>(pool.size(), total);
  pool.run_on_all([&](int tid) {
    if (tid >= nthreads) return;
    // Kept between calls: a fresh zeroed buffer per layer would cost a memset of every score row,
    // and the span list would be allocated at every step.
    thread_local std::vector<float> scratch;
    thread_local std::vector<kernels::KVSpan> spans;
    const size_t need = kernels::attend_scratch_floats(max_rows, nh, hd);
    if (scratch.size() < need) scratch.resize(need);
    const int64_t begin = total * tid / nthreads, end = total * (tid + 1) / nthreads;
    for (int64_t idx = begin; idx < end;) {
      const int64_t ti = idx / nh, h0 = idx % nh, h1 = std::min(nh, h0 + (end - idx));
      const AttentionTask& t = tasks[static_cast<size_t>(ti)];
      const float* qt = st.q + t.row * nh * hd;
      float* ot = st.out + t.row * nh * hd;
      if (t.kv->per_head_spans(t.pos)) {
        // Sparse selection: each KV head reads its own units, chosen by the query heads it serves.
        for (int64_t h = h0; h < h1; ++h) {
          spans.clear();
          const int64_t kvh = h / group;
          t.kv->query_spans(st.layer, t.pos, kvh, qt + kvh * group * hd, group, spans);
          kernels::attend(qt, spans, st.shape, ot, h, h + 1, scratch.data());
        }
      } else {
        spans.clear();
        t.kv->visible_spans(st.layer, t.pos, spans);
        kernels::attend(qt, spans, st.shape, ot, h0, h1, scratch.data());
      }
      idx += h1 - h0;
    }
  });
}

void Decoder::attend_reference_run(const AttentionStep& st, SequenceKV& kv, int64_t row, int64_t first, int64_t n,
                                   ThreadPool& pool) const {
  const int64_t width = cfg_.n_heads * cfg_.head_dim;
  thread_local std::vector<kernels::KVSpan> spans;
  spans.clear();
  kv.visible_spans(st.layer, first + n - 1, spans);
  int64_t rows = 0;
  for (const kernels::KVSpan& sp : spans) rows += sp.tokens;
  if (rows == first + n) {
    kernels::attend_causal(st.q + row * width, n, first, spans, st.shape, st.out + row * width, pool);
    return;
  }
  // Rows that are not the positions 0.. in order (a rolling reference that dropped pages): one
  // query at a time.
  std::vector<AttentionTask> one_by_one;
  for (int64_t j = 0; j < n; ++j) one_by_one.push_back({&kv, row + j, first + j});
  attend_tasks(st, one_by_one, pool);
}

void Decoder::attention(int64_t layer, std::span<const Input> batch, const int64_t* first_pos, float* q,
                        float* k, float* v, float* out, ThreadPool& pool) {
  const int64_t hd = cfg_.head_dim, kv_row = cfg_.n_kv_heads * hd;
  const AttentionStep st{layer, q, out, {cfg_.n_heads, cfg_.n_kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))}};
  // Blocks of a tiered reference stay pinned only while this layer reads them: the scopes end when
  // this function does, however it ends (kept per thread, so that no step allocates them).
  thread_local std::vector<SequenceKV::ReadScope> reads;
  struct EndReads {
    ~EndReads() { reads.clear(); }
  } end_reads;
  for (const Input& in : batch) reads.emplace_back(*in.kv);
  auto store = [&](SequenceKV& kv, int64_t row, int64_t pos) {
    kv.store(layer, pos, k + row * kv_row, v + row * kv_row);
    kv.observe_query(layer, pos, q + row * cfg_.n_heads * hd, cfg_.n_heads);  // --kv-keep's observation window
  };
  // Kept between calls like the activations (RunState): single tokens of the batch, attended together.
  thread_local std::vector<AttentionTask> parallel;
  parallel.clear();
  // Long runs of reference tokens attend as matrix products (causal_attention.h), once their keys
  // and values are stored: {input, first row, count}.
  struct Run {
    size_t input;
    int64_t row, n;
  };
  std::vector<Run> runs;
  int64_t row = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Input& in = batch[i];
    const int64_t n = in.count();
    if (in.reference && n >= kCausalRunMinTokens) {
      for (int64_t j = 0; j < n; ++j) store(*in.kv, row + j, first_pos[i] + j);
      runs.push_back({i, row, n});
    } else if (!in.reference && in.kv->policy().windowed() && n > 1) {
      // Several generated tokens at once into a ring: each must be written and attended before the
      // next one may overwrite a slot it still sees.
      for (int64_t j = 0; j < n; ++j) {
        const AttentionTask t{in.kv, row + j, first_pos[i] + j};
        store(*t.kv, t.row, t.pos);
        attend_tasks(st, {&t, 1}, pool);
      }
    } else {
      for (int64_t j = 0; j < n; ++j) {
        store(*in.kv, row + j, first_pos[i] + j);
        parallel.push_back({in.kv, row + j, first_pos[i] + j});
      }
    }
    row += n;
  }
  if (!parallel.empty()) attend_tasks(st, parallel, pool);
  for (const Run& r : runs) attend_reference_run(st, *batch[r.input].kv, r.row, first_pos[r.input], r.n, pool);
}

void Decoder::forward(std::span<const Input> batch, float* logits, ThreadPool& pool) {
  for (const Input& in : batch) {
    if (!in.kv) throw Error(Error::Kind::Internal, "decoder input without a KV sequence");
    if (in.count() == 0) throw_invalid("empty input: at least one token is needed");
    if (in.kv->length() + in.count() > cfg_.max_positions)
      throw_invalid("sequence of " + std::to_string(in.kv->length() + in.count()) + " tokens exceeds the model's context of " +
                    std::to_string(cfg_.max_positions));
    if (!in.embeddings)
      for (int32_t tok : in.tokens)
        if (tok < 0 || tok >= cfg_.vocab)
          throw_invalid("token id " + std::to_string(tok) + " is outside the vocabulary of " + std::to_string(cfg_.vocab));
  }
  // Reserve KV for every input up front. If one does not fit, the ones already extended are
  // rolled back, so a refused batch leaves every sequence as it was.
  std::vector<int64_t> first_pos(batch.size());
  std::vector<SequenceKV::Checkpoint> marks;
  try {
    for (size_t i = 0; i < batch.size(); ++i) {
      marks.push_back(batch[i].kv->checkpoint());
      first_pos[i] = batch[i].kv->append(batch[i].count(), batch[i].reference);
    }
  } catch (...) {
    for (SequenceKV::Checkpoint& m : marks) m.roll_back();
    throw;
  }

  if (!split_by_sequence(batch, pool)) {
    count_decode_step(batch, run(batch, first_pos.data(), logits, pool));
    return;
  }
  // Each thread runs whole sequences through every layer on its own: one hand-off per step instead
  // of several per layer. Exceptions are carried back to this thread (a worker must not throw).
  const int64_t B = static_cast<int64_t>(batch.size()), parts = std::min<int64_t>(pool.size(), B);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  std::vector<size_t> streamed(static_cast<size_t>(parts));
  const bool row_invariant = kernels::RowInvariantScope::active_on_this_thread();
  pool.run_on_all([&](int tid) {
    if (tid >= parts) return;
    const int64_t b = B * tid / parts, e = B * (tid + 1) / parts;
    try {
      const kernels::RowInvariantScope scope(row_invariant);  // the caller's choice holds on workers too
      ThreadPool solo(1);
      streamed[static_cast<size_t>(tid)] =
          run(batch.subspan(static_cast<size_t>(b), static_cast<size_t>(e - b)), first_pos.data() + b, logits + b * cfg_.vocab, solo);
    } catch (...) {
      errors[static_cast<size_t>(tid)] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  count_decode_step(batch, std::accumulate(streamed.begin(), streamed.end(), size_t{0}));
}

void Decoder::count_decode_step(std::span<const Input> batch, size_t weight_bytes) {
  size_t kv = 0;
  for (const Input& in : batch) {
    if (in.reference || in.count() != 1) return;  // a prefill, or several tokens of one sequence
    kv += in.kv->active_bytes(in.kv->length() - 1);
  }
  decode_steps_.fetch_add(1, std::memory_order_relaxed);
  decode_tokens_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
  decode_weight_bytes_.fetch_add(weight_bytes, std::memory_order_relaxed);
  decode_kv_bytes_.fetch_add(kv, std::memory_order_relaxed);
}

Decoder::DecodeReads Decoder::decode_reads() const {
  return {decode_steps_.load(std::memory_order_relaxed), decode_tokens_.load(std::memory_order_relaxed),
          decode_weight_bytes_.load(std::memory_order_relaxed), decode_kv_bytes_.load(std::memory_order_relaxed)};
}

bool Decoder::split_by_sequence(std::span<const Input> batch, const ThreadPool& pool) const {
  if (pool.size() < 2 || batch.size() < 2) return false;
  for (const Input& in : batch)
    if (in.count() != 1) return false;
  return active_weight_bytes_ <= kSplitBySequenceMaxWeightBytes;
}

size_t Decoder::run(std::span<const Input> batch, const int64_t* first_pos, float* logits, ThreadPool& pool) {
  const int64_t H = cfg_.hidden, nh = cfg_.n_heads, nkv = cfg_.n_kv_heads, hd = cfg_.head_dim;
  int64_t T = 0;
  for (const Input& in : batch) T += in.count();
  RunState& st = run_state(T, static_cast<int64_t>(batch.size()));
  size_t streamed = lm_head_->nbytes() + static_cast<size_t>(T) * embed_->row_bytes();
  const bool rotated = batch.front().kv->layout().types.rotated;  // one pool per batch
  float *x = st.x.data(), *xn = st.xn.data(), *q = st.q.data(), *k = st.k.data(), *v = st.v.data();
  float *att = st.att.data(), *y = st.y.data();
  int64_t r = 0;
  for (const Input& in : batch) {
    if (!in.embeddings) {
      for (int32_t tok : in.tokens) embed(tok, x + (r++) * H);
      continue;
    }
    std::copy_n(in.embeddings, in.n_embeddings * H, x + r * H);
    r += in.n_embeddings;
  }
  for (int64_t l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    kernels::rms_norm(x, L.attn_norm.data(), xn, T, H, cfg_.rms_eps);
    const kernels::MatmulJob qkv[] = {{L.wq, xn, T, q}, {L.wk, xn, T, k}, {L.wv, xn, T, v}};
    kernels::matmul_many(qkv, pool, prefill_precision_);
    r = 0;
    for (size_t i = 0; i < batch.size() && cfg_.rope; ++i) {
      for (int64_t j = 0; j < batch[i].count(); ++j, ++r) {
        kernels::apply_rope(q + r * nh * hd, nh, first_pos[i] + j, rope_, cfg_.rope_style);
        kernels::apply_rope(k + r * nkv * hd, nkv, first_pos[i] + j, rope_, cfg_.rope_style);
      }
    }
    if (rotated) {
      // Stored K and V rotated per head; q rotated alike keeps q.k; the output is rotated back.
      kernels::hadamard_rows(q, T * nh, hd);
      kernels::hadamard_rows(k, T * nkv, hd);
      kernels::hadamard_rows(v, T * nkv, hd);
    }
    attention(l, batch, first_pos, q, k, v, att, pool);
    if (rotated) kernels::hadamard_rows(att, T * nh, hd);
    kernels::matmul(*L.wo, att, T, y, pool, prefill_precision_);
    kernels::add_inplace(x, y, T * H);
    streamed += L.wq->nbytes() + L.wk->nbytes() + L.wv->nbytes() + L.wo->nbytes();

    kernels::rms_norm(x, L.ffn_norm.data(), xn, T, H, cfg_.rms_eps);
    streamed += L.moe ? moe(L, xn, T, y, pool) : mlp(L.dense, xn, T, y, pool);
    kernels::add_inplace(x, y, T * H);
  }
  // Logits of each input's last token only.
  r = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    r += batch[i].count();
    kernels::rms_norm(x + (r - 1) * H, final_norm_.data(), st.last.data() + i * H, 1, H, cfg_.rms_eps);
  }
  kernels::matmul(*lm_head_, st.last.data(), static_cast<int64_t>(batch.size()), logits, pool, prefill_precision_);
  return streamed;
}

}  // namespace folio
