// llama_cpp_clip_embed: llama.cpp's own vision tower (tools/mtmd's clip) on one DeepSeek-OCR Base
// view, the oracle for folio's mmproj path.
//
// The 1024 x 1024 view is synthetic and computed the same way on both sides, so no image decoder
// or resize is involved: pixel (x, y, c) = (7x + 13y + 29c + (x*y % 11)) mod 256, normalised as
// DeepSeek-OCR does ((v / 255 - 0.5) / 0.5). Writes the assembled embeddings (273 x n_embed f32,
// row-major, view separator last) to OUT.
//
// Build against a llama.cpp checkout built with CMake (CPU only), e.g.:
//   g++ -O2 -std=c++17 tools/oracles/llama_cpp_clip_embed.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -I LLAMA/tools/mtmd -L LLAMA/build/bin -lmtmd -lllama -lggml -lggml-base \
//       -Wl,-rpath,LLAMA/build/bin -o /tmp/llama_cpp_clip_embed
// Run: /tmp/llama_cpp_clip_embed MMPROJ.gguf OUT.f32 [THREADS]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "clip-impl.h"
#include "clip.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MMPROJ.gguf OUT.f32 [THREADS]\n", argv[0]);
    return 2;
  }
  clip_context_params p{};
  p.use_gpu = false;
  p.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
  p.image_min_tokens = -1;
  p.image_max_tokens = -1;
  p.warmup = false;
  clip_ctx* ctx = clip_init(argv[1], p).ctx_v;
  if (!ctx) return 1;
  const int side = 1024;
  clip_image_f32 img;
  img.set_size({side, side}, false, false);
  img.add_viewsep = true;  // the global view
  std::vector<float> buf(static_cast<size_t>(side) * side * 3);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      for (int c = 0; c < 3; ++c) {
        const int v = (7 * x + 13 * y + 29 * c + (x * y % 11)) % 256;
        buf[(static_cast<size_t>(y) * side + x) * 3 + c] = (v / 255.0f - 0.5f) / 0.5f;
      }
  img.cpy_buf(buf);
  const int n_embd = clip_n_mmproj_embd(ctx);
  std::vector<float> out(static_cast<size_t>(clip_n_output_tokens(ctx, &img)) * n_embd);  // clip fills a sized buffer
  if (!clip_image_encode(ctx, argc > 3 ? std::atoi(argv[3]) : 2, &img, out)) return 1;
  std::fprintf(stderr, "%zu values = %zu rows x %d\n", out.size(), out.size() / n_embd, n_embd);
  std::FILE* f = std::fopen(argv[2], "wb");
  if (!f || std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) return 1;
  std::fclose(f);
  clip_free(ctx);
  return 0;
}
