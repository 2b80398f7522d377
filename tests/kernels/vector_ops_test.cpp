// dot and axpy over f32 / f16 / bf16 operands (KV-cache rows), on every ISA the CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/matmul.h"
#include "kernel_test_util.h"

namespace folio::kernels {
namespace {

using testing::IsaGuard;
using testing::random_floats;
using testing::supported_isas;

struct Stored {
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
};

Stored store(DType t, const std::vector<float>& v) {
  Stored s;
  s.bytes.resize(dtype_row_bytes(t, static_cast<int64_t>(v.size())) + 1);
  convert_from_f32(t, v.data(), s.bytes.data(), static_cast<int64_t>(v.size()));
  s.decoded.resize(v.size());
  convert_to_f32(t, s.bytes.data(), s.decoded.data(), static_cast<int64_t>(v.size()));
  return s;
}

const int64_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 128, 129};

TEST(VectorOps, DotMatchesReference) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      for (int64_t n : kLengths) {
        std::vector<float> a = random_floats(n, 1), bf = random_floats(n, 2);
        Stored b = store(t, bf);
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
          ref += static_cast<double>(a[i]) * b.decoded[i];
          mag += std::fabs(static_cast<double>(a[i]) * b.decoded[i]);
        }
        float got = dot(a.data(), b.bytes.data(), t, n);
        EXPECT_NEAR(got, ref, 2e-6 * mag + 1e-30) << dtype_name(t) << " n=" << n << " " << isa_name(isa);
      }
    }
  }
}

// dot_rows scores rows in groups; each score must be bitwise the single-row dot of that row, so a
// row's score never depends on how many rows its span has or where in the span it sits.
TEST(VectorOps, DotRowsEqualsDotOfEachRowBitwise) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    const detail::KernelTable& table = detail::table_for(isa);
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (int64_t n : {8, 32, 33, 128})
        for (int64_t count : {1, 3, 4, 5, 9, 16}) {
          const size_t stride = dtype_row_bytes(t, n) + 64;  // rows apart, as the heads of a KV block are
          std::vector<uint8_t> rows(stride * static_cast<size_t>(count + 17));  // + prefetch distance
          for (int64_t r = 0; r < count; ++r) {
            const std::vector<float> v = random_floats(n, static_cast<uint32_t>(10 + r));
            convert_from_f32(t, v.data(), rows.data() + r * stride, n);
          }
          const std::vector<float> q = random_floats(n, 3);
          std::vector<float> out(static_cast<size_t>(count));
          const float scale = 0.125f;
          table.dot_rows[t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2](q.data(), rows.data(), stride, count, n, scale, out.data());
          for (int64_t r = 0; r < count; ++r)
            EXPECT_EQ(out[r], scale * dot(q.data(), rows.data() + r * stride, t, n))
                << dtype_name(t) << " n=" << n << " count=" << count << " row " << r << " " << isa_name(isa);
        }
  }
}

TEST(VectorOps, AxpyMatchesReference) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      for (int64_t n : kLengths) {
        std::vector<float> xf = random_floats(n, 3), y = random_floats(n + 1, 4);
        Stored x = store(t, xf);
        const float alpha = -0.37f;
        std::vector<float> want(y);
        for (int64_t i = 0; i < n; ++i)
          want[i] = static_cast<float>(want[i] + static_cast<double>(alpha) * x.decoded[i]);
        axpy(alpha, x.bytes.data(), t, y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          // One fused or two separate roundings: within an ulp of the exact result.
          EXPECT_NEAR(y[i], want[i], 2e-7 * (std::fabs(want[i]) + std::fabs(alpha * x.decoded[i])))
              << dtype_name(t) << " n=" << n << " i=" << i << " " << isa_name(isa);
        }
        EXPECT_EQ(y[n], want[n]) << "axpy wrote past the end, n=" << n;
      }
    }
  }
}

TEST(VectorOps, RejectQ8) {
  std::vector<float> a(32), y(32);
  std::vector<uint8_t> b(34);
  for (auto call : {0, 1}) {
    try {
      if (call == 0)
        dot(a.data(), b.data(), DType::Q8_0, 32);
      else
        axpy(1.0f, b.data(), DType::Q8_0, y.data(), 32);
      ADD_FAILURE() << "q8_0 accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("q8_0"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(call == 0 ? "dot" : "axpy"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace folio::kernels
