// Shared helpers for the kernel tests: random weights in every dtype and the ISAs to loop over.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"

namespace folio::kernels::testing {

// Every instruction set this CPU can run, scalar first.
inline std::vector<Isa> supported_isas() {
  std::vector<Isa> v{Isa::Scalar};
  if (best_isa() >= Isa::Avx2) v.push_back(Isa::Avx2);
  if (best_isa() >= Isa::Avx512) v.push_back(Isa::Avx512);
  return v;
}

// Every kernel table this CPU can run, scalar first; AVX-512 without VNNI even where the CPU has it.
inline std::vector<const detail::KernelTable*> all_tables() {
  std::vector<const detail::KernelTable*> t{&detail::scalar_table()};
  if (best_isa() >= Isa::Avx2) t.push_back(&detail::avx2_table());
  if (best_isa() >= Isa::Avx512) t.push_back(&detail::avx512_plain_table());
  if (best_isa() >= Isa::Avx512 && __builtin_cpu_supports("avx512vnni")) t.push_back(&detail::avx512_vnni_table());
  return t;
}

// Restores the active ISA when a test that changes it ends.
class IsaGuard {
 public:
  IsaGuard() : saved_(active_isa()) {}
  ~IsaGuard() { set_isa(saved_); }

 private:
  Isa saved_;
};

inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

// A [rows, cols] weight stored as `t`, plus the f32 values it decodes to (the reference's input).
struct StoredWeight {
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
  TensorView view;
};

inline StoredWeight make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  StoredWeight w;
  std::vector<float> f = random_floats(rows * cols, seed);
  w.bytes.resize(static_cast<size_t>(rows) * dtype_row_bytes(t, cols));
  convert_from_f32(t, f.data(), w.bytes.data(), rows * cols);
  w.decoded.resize(f.size());
  convert_to_f32(t, w.bytes.data(), w.decoded.data(), rows * cols);
  w.view.name = "test.weight";
  w.view.dtype = t;
  w.view.shape = {rows, cols};
  w.view.data = w.bytes.data();
  return w;
}

}  // namespace folio::kernels::testing
