#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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
std::atomic<bool> g_interleave{true};
}  // namespace

bool interleave_pays() {
  return g_interleave.load(std::memory_order_relaxed) && active_isa() == Isa::Avx512 &&
         __builtin_cpu_supports("avx512vnni");
}

void set_interleave(bool enabled) { g_interleave.store(enabled, std::memory_order_relaxed); }

namespace {

bool tile_state_granted() {
#if defined(__x86_64__)
  static const bool ok = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

std::atomic<bool> g_int8_amx{true};

}  // namespace

bool amx_granted(AmxType type) {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  const unsigned products = type == AmxType::Bf16 ? 1u << 22 : 1u << 25, tiles = 1u << 24;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & products) || !(d & tiles)) return false;
  return tile_state_granted();
#else
  (void)type;
  return false;
#endif
}

bool int8_amx_active() {
  static const bool supported = amx_granted(AmxType::Int8);
  return supported && g_int8_amx.load(std::memory_order_relaxed);
}

void set_int8_amx(bool enabled) { g_int8_amx.store(enabled, std::memory_order_relaxed); }

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
