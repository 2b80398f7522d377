// Decoder: the transformer language model (llama / deepseek_v2-without-MLA), read top to bottom.
//
// Weights stay where the checkpoint put them (mmap, any supported dtype); only the small norm
// vectors are copied to f32. forward() runs one step for a batch of sequences: each input brings
// its tokens (or precomputed embeddings, e.g. image features), its SequenceKV, and whether the tokens
// extend the reference (first prefill) or are generated. All tokens of the batch share every weight
// read, which is what makes batched decoding cheaper than one sequence at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kv/kv_layout.h"
#include "kv/sequence_kv.h"
#include "io/tensor_source.h"
#include "kernels/cpu/matmul.h"
#include "model/model_config.h"
#include "model/weight_names.h"

namespace folio {

class Decoder {
 public:
  struct Input {
    SequenceKV* kv = nullptr;
    std::span<const int32_t> tokens;    // token ids, unless `embeddings` is set
    const float* embeddings = nullptr;  // [n_embeddings, hidden] rows used instead of token ids
    int64_t n_embeddings = 0;
    bool reference = false;             // these tokens extend the reference (the first prefill)
    int64_t count() const { return embeddings ? n_embeddings : static_cast<int64_t>(tokens.size()); }
  };

  // Finds and shape-checks every tensor the config implies; a missing or mis-shaped tensor is an
  // InvalidInput error naming it. `weights` must outlive the decoder.
  Decoder(ModelConfig config, const TensorSource& weights, WeightNaming naming);

  const ModelConfig& config() const { return cfg_; }
  // Accepts positions up to `positions` instead of the checkpoint's max_position_embeddings. RoPE
  // simply continues past the trained range, so outputs there are untrustworthy; this exists for
  // benchmarks of speed and memory beyond the model's context (`folio bench decode --context`).
  void set_context(int64_t positions);
  KVLayout kv_layout(DType kv_dtype) const { return {cfg_.n_layers, cfg_.n_kv_heads, cfg_.head_dim, kv_dtype}; }
  KVLayout kv_layout(const KVTypes& types) const { return {cfg_.n_layers, cfg_.n_kv_heads, cfg_.head_dim, types}; }

  // The arithmetic of prefill's products (steps of kernels::matmul_gemm_min_rows() tokens or more):
  // F32, the default, or Bf16 (X and the weights, dequantised if they are a block format, rounded
  // to bf16 and summed in f32: about twice as fast where the CPU has AVX512-BF16, and within the
  // bounds decoder_golden_test states of F32's logits). Steps of fewer rows, and decode rows under
  // a kernels::RowInvariantScope (the scheduler's batch-invariant steps), take the GEMV either way.
  // Set it before forward(), not during.
  void set_prefill_precision(kernels::GemmPrecision p) { prefill_precision_ = p; }
  kernels::GemmPrecision prefill_precision() const { return prefill_precision_; }

  // One step for a batch. Appends each input's tokens to its KV (at its next positions), runs all
  // layers, and writes the logits of each input's last token to logits[i * vocab ...].
  // Errors (context overflow, KV pool full) leave every sequence unchanged.
  void forward(std::span<const Input> batch, float* logits, ThreadPool& pool);

  // Embedding row of a token, as f32.
  void embed(int32_t token, float* out) const;

  int64_t parameter_count() const { return params_; }
  // Weight bytes read for one decoded token (dense layers, attention, the experts a token uses on
  // average, router, lm_head): the numerator of the memory-bandwidth roofline.
  size_t active_weight_bytes_per_token() const { return active_weight_bytes_; }
  // Weights one token of a prefill multiplies by (attention projections, its MLP or router + experts
  // it uses on average + shared experts; not the embedding or lm_head, which prefill applies to one
  // row per pass): 2x this per token is prefill's matmul FLOPs.
  int64_t prefill_params_per_token() const;

  // Decode steps of models whose active weights are at most this size run whole sequences per
  // thread (the batch split in contiguous groups, every layer on one thread) instead of splitting
  // each matmul and attention across the pool. Such weights stay in the shared L3 cache, so two
  // threads reading them cost no extra memory traffic, and a step needs one hand-off between
  // threads instead of several per layer, which dominated small models' batched steps. Bigger
  // models are bound by reading their weights and keep one split read per step.
  static constexpr size_t kSplitBySequenceMaxWeightBytes = size_t{8} << 20;
  // True when forward() runs this batch whole sequences per thread: a decode step (every input a
  // single token) of two or more sequences, more than one thread, and small active weights.
  bool split_by_sequence(std::span<const Input> batch, const ThreadPool& pool) const;
  size_t weight_bytes() const { return weight_bytes_; }

  // What the decode steps (forward() calls whose every input is one generated token) have read
  // since the decoder was made: the weight matrices each step streamed, counted once per step each
  // (an expert once however many of the step's tokens chose it; the embedding rows of its tokens),
  // and the KV each of its tokens attended over (SequenceKV::active_bytes). Over the steps' time
  // this is the read rate decode reached, to set beside the machine's memory bandwidth. Steps that
  // throw are not counted. Safe to call while another thread runs forward().
  struct DecodeReads {
    int64_t steps = 0, tokens = 0;
    uint64_t weight_bytes = 0, kv_bytes = 0;
  };
  DecodeReads decode_reads() const;

 private:
  struct Mlp {
    const TensorView* gate = nullptr;
    const TensorView* up = nullptr;
    const TensorView* down = nullptr;
  };
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    const TensorView *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
    bool moe = false;
    Mlp dense;                 // dense MLP (non-MoE layers)
    const TensorView* router = nullptr;
    std::vector<Mlp> experts;  // routed experts
    Mlp shared;                // shared experts fused into one MLP (width moe_intermediate x n_shared)
  };

  // The activations of one forward ([rows, width] each; `last`: one row per input). One per calling
  // thread, kept between calls and grown to the largest batch that thread has run, so a decode step
  // allocates no activations (attention keeps its span lists per thread too) and a prefill pass
  // reuses the last pass's pages. The experts' activations
  // are kept the same way (decoder.cpp, MoeScratch). Memory: a 2,048-token pass of the full-size
  // Unlimited-OCR decoder keeps ~70 MB here and ~250 MB of expert activations per thread that ran it.
  struct RunState {
    std::vector<float> x, xn, q, k, v, att, y, last;
  };
  RunState& run_state(int64_t rows, int64_t inputs) const;

  const TensorView* need(const std::string& name, std::vector<int64_t> shape);
  size_t count_active_weight_bytes() const;
  // The layers and logits of a batch whose KV positions are reserved (first_pos[i]: input i's first).
  // Returns the weight bytes it streamed (DecodeReads).
  size_t run(std::span<const Input> batch, const int64_t* first_pos, float* logits, ThreadPool& pool);
  // Adds a finished decode step to the DecodeReads counters.
  void count_decode_step(std::span<const Input> batch, size_t weight_bytes);
  // Stores the batch's keys and values in layer `layer` and attends every query: single tokens
  // together over the pool, long reference runs as matrix products.
  void attention(int64_t layer, std::span<const Input> batch, const int64_t* first_pos, float* q, float* k,
                 float* v, float* out, ThreadPool& pool);
  // One layer's attention: queries in q, outputs into out ([rows][n_heads * head_dim] each).
  struct AttentionStep {
    int64_t layer;
    const float* q;
    float* out;
    kernels::AttentionShape shape;
  };
  // A query: its sequence, its row in the batch's activations and its absolute position.
  struct AttentionTask {
    SequenceKV* kv;
    int64_t row, pos;
  };
  // Attends every (token, head) of `tasks`, spread over the pool: the (token, head) pairs in order
  // are cut into one contiguous range per thread, and each token's heads in a range go to the kernel
  // in one call, which reads a KV block's rows of all those heads in one pass (they lie side by side).
  void attend_tasks(const AttentionStep& st, std::span<const AttentionTask> tasks, ThreadPool& pool) const;
  // n reference tokens from position `first` (rows row..), stored already, as one causal product;
  // one query at a time when the visible rows are not positions 0.. in order.
  void attend_reference_run(const AttentionStep& st, SequenceKV& kv, int64_t row, int64_t first, int64_t n, ThreadPool& pool) const;
  // Both return the weight bytes they streamed (moe: the router, the experts its tokens chose, the
  // shared experts).
  size_t mlp(const Mlp& m, const float* x, int64_t n, float* y, ThreadPool& pool);
  size_t moe(const Layer& L, const float* x, int64_t n, float* y, ThreadPool& pool);

  ModelConfig cfg_;
  const TensorSource& src_;
  WeightNaming naming_;
  const TensorView* embed_ = nullptr;
  const TensorView* lm_head_ = nullptr;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
  kernels::RopeTable rope_;
  std::set<std::string> used_;
  int64_t params_ = 0;
  size_t weight_bytes_ = 0;
  kernels::GemmPrecision prefill_precision_ = kernels::GemmPrecision::F32;
  size_t active_weight_bytes_ = 0;
  std::atomic<int64_t> decode_steps_{0}, decode_tokens_{0};
  std::atomic<uint64_t> decode_weight_bytes_{0}, decode_kv_bytes_{0};
};

}  // namespace folio
