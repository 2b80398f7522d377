// llama_cpp_greedy: greedy decoding of a GGUF by llama.cpp itself, the oracle for folio's GGUF path.
//
// Feeds the prompt as token ids (no tokenizer involved), then takes the argmax of each step's
// logits for N steps, full attention, f32 KV cache, one thread (deterministic). Prints one JSON
// object: the generated ids and the logits after the prompt.
//
// Build against a llama.cpp checkout built with CMake (CPU only), e.g.:
//   g++ -O2 -std=c++17 tools/oracles/llama_cpp_greedy.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -L LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,LLAMA/build/bin -o /tmp/llama_cpp_greedy
// Run: /tmp/llama_cpp_greedy MODEL.gguf N_STEPS ID ID ID ...
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N_STEPS PROMPT_ID...\n", argv[0]);
    return 2;
  }
  const int steps = std::atoi(argv[2]);
  std::vector<llama_token> prompt;
  for (int i = 3; i < argc; ++i) prompt.push_back(std::atoi(argv[i]));

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  // LLAMA_NO_REPACK=1: ggml's plain vec_dot kernels instead of its repacked (interleaved) ones.
  if (std::getenv("LLAMA_NO_REPACK")) mp.use_extra_bufts = false;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(prompt.size() + steps + 8);
  cp.n_batch = cp.n_ctx;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  llama_batch batch = llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()));
  if (llama_decode(ctx, batch) != 0) return 1;
  std::printf("{\"prompt\": [");
  for (size_t i = 0; i < prompt.size(); ++i) std::printf("%s%d", i ? ", " : "", prompt[i]);
  std::printf("],\n \"logits_after_prompt\": [");
  const float* first = llama_get_logits_ith(ctx, -1);
  for (int v = 0; v < n_vocab; ++v) std::printf("%s%.7g", v ? ", " : "", first[v]);
  std::vector<llama_token> tokens;
  std::vector<float> margins;  // best logit minus the runner-up: how far each step is from a tie
  for (int s = 0; s < steps; ++s) {
    const float* logits = llama_get_logits_ith(ctx, -1);
    llama_token best = 0;
    for (int v = 1; v < n_vocab; ++v)
      if (logits[v] > logits[best]) best = v;
    float second = -1e30f;
    for (int v = 0; v < n_vocab; ++v)
      if (v != best && logits[v] > second) second = logits[v];
    tokens.push_back(best);
    margins.push_back(logits[best] - second);
    if (std::getenv("LLAMA_DUMP_STEPS")) {
      for (int v = 0; v < n_vocab; ++v) std::fprintf(stderr, "%s%.7g", v ? " " : "STEP ", logits[v]);
      std::fprintf(stderr, "\n");
    }
    llama_batch one = llama_batch_get_one(&tokens.back(), 1);
    if (llama_decode(ctx, one) != 0) return 1;
  }
  std::printf("],\n \"tokens\": [");
  for (size_t i = 0; i < tokens.size(); ++i) std::printf("%s%d", i ? ", " : "", tokens[i]);
  std::printf("],\n \"margins\": [");
  for (size_t i = 0; i < margins.size(); ++i) std::printf("%s%.4g", i ? ", " : "", margins[i]);
  std::printf("]}\n");
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
