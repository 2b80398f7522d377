#include "kernels/cpu/cpu_features.h"

#include <atomic>

namespace folio::kernels {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

// -1 until first use; then the active Isa. Relaxed is enough: any thread that reads it either sees
// the detected value or recomputes the same one.
std::atomic<int> g_active{-1};

}  // namespace

Isa best_isa() {
  static const Isa best = detect();
  return best;
}

Isa active_isa() {
  int v = g_active.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(best_isa());
    g_active.store(v, std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

void set_isa(Isa isa) {
  int want = static_cast<int>(isa);
  int best = static_cast<int>(best_isa());
  g_active.store(want < best ? want : best, std::memory_order_relaxed);
}

namespace {
std::atomic<bool> g_interleave_q4k{true};
}  // namespace

bool q4k_interleave_pays() {
  return g_interleave_q4k.load(std::memory_order_relaxed) && active_isa() == Isa::Avx512 &&
         __builtin_cpu_supports("avx512vnni");
}

void set_q4k_interleave(bool enabled) { g_interleave_q4k.store(enabled, std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (name == isa_name(isa)) return isa;
  return std::nullopt;
}

}  // namespace folio::kernels
