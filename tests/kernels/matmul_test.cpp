#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/quant_blocks.h"
#include "kernels/cpu/cpu_features.h"
#include "kernel_test_util.h"

namespace folio::kernels {
namespace {

using testing::IsaGuard;
using testing::make_weight;
using testing::random_floats;
using testing::StoredWeight;
using testing::supported_isas;

// Forces the GEMV or the sgemm path for every n while alive.
class PathGuard {
 public:
  enum Path { Gemv, Sgemm };
  explicit PathGuard(Path p) : saved_(matmul_gemm_min_rows()) {
    set_matmul_gemm_min_rows(p == Gemv ? std::numeric_limits<int64_t>::max() : 1);
  }
  ~PathGuard() { set_matmul_gemm_min_rows(saved_); }

 private:
  int64_t saved_;
};

const char* path_name(PathGuard::Path p) { return p == PathGuard::Gemv ? "gemv" : "sgemm"; }

struct Shape {
  int64_t out, in;
};

// q5_1's minima meet the activations through llama.cpp's q8_1 sum, d times the codes' sum rounded
// to f16 (quant_blocks.h): an error of up to 2^-10 of |m| times the block's |x| sum, by design.
double q5_1_min_rounding(const StoredWeight& w, const float* x, int64_t r) {
  if (w.view.dtype != DType::Q5_1) return 0;
  const auto* blocks = reinterpret_cast<const BlockQ5_1*>(w.view.row_ptr(r));
  double bound = 0;
  for (int64_t b = 0; b < w.view.shape[1] / 32; ++b) {
    double xs = 0;
    for (int i = 0; i < 32; ++i) xs += std::fabs(x[b * 32 + i]);
    bound += std::ldexp(std::fabs(f16_to_f32(blocks[b].m)) * xs, -10);
  }
  return bound;
}

// Checks y against a double-precision product of x with the decoded weights. The bound scales
// with sum |w_i x_i|, the natural size of f32 rounding error in a dot product.
void expect_matches_reference(const StoredWeight& w, const std::vector<float>& x, int64_t n,
                              const std::vector<float>& y, const std::string& what) {
  const int64_t out = w.view.shape[0], in = w.view.shape[1];
  int bad = 0;
  for (int64_t g = 0; g < n; ++g) {
    for (int64_t r = 0; r < out; ++r) {
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < in; ++i) {
        double p = static_cast<double>(w.decoded[r * in + i]) * x[g * in + i];
        ref += p;
        mag += std::fabs(p);
      }
      double got = y[g * out + r];
      const bool gemv = n < matmul_gemm_min_rows();
      const double extra = gemv ? q5_1_min_rounding(w, &x[static_cast<size_t>(g * in)], r) : 0;
      if (std::fabs(got - ref) > 2e-6 * mag + extra + 1e-30 && ++bad <= 3)
        ADD_FAILURE() << what << " row " << g << " col " << r << ": got " << got << " want " << ref;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

// What the GEMV path of a block-quantised weight multiplies by: each row of x quantised to 8 bits
// per block, written here from the format description (quant_blocks.h), not with folio's quantiser.
// Every other case (float weights, the sgemm path) multiplies by x itself.
std::vector<float> effective_x(DType t, const std::vector<float>& x, int64_t n) {
  if (!dtype_is_block_quantized(t) || n >= matmul_gemm_min_rows()) return x;
  std::vector<float> out(x.size());
  const int64_t block = t >= DType::Q4_K ? 256 : 32;
  for (size_t b0 = 0; b0 < x.size(); b0 += static_cast<size_t>(block)) {
    const float* v = x.data() + b0;
    if (block == 32) {
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float d = amax / 127.f, id = d > 0 ? 1.f / d : 0.f, d16 = f16_to_f32(f32_to_f16(d));
      for (int i = 0; i < 32; ++i) out[b0 + i] = d16 * std::round(v[i] * id);
    } else {
      float max = 0;
      for (int i = 0; i < 256; ++i)
        if (std::fabs(v[i]) > std::fabs(max)) max = v[i];
      const float iscale = max != 0 ? -127.f / max : 0.f;
      for (int i = 0; i < 256; ++i)
        out[b0 + i] = max != 0 ? std::min(127.f, std::nearbyint(iscale * v[i])) * (1.f / iscale) : 0.f;
    }
  }
  return out;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                                       DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  return v;
}

// A row length of about `want` that the dtype's blocks divide.
int64_t cols_for(DType t, int64_t want) {
  const int64_t b = dtype_block_elems(t);
  return b == 1 ? want : std::max<int64_t>(1, want / b) * b;
}

std::string describe(DType t, Shape s, int64_t n, Isa isa, int threads) {
  return std::string(dtype_name(t)) + " [" + std::to_string(s.out) + "," + std::to_string(s.in) + "] n=" +
         std::to_string(n) + " " + isa_name(isa) + " threads=" + std::to_string(threads);
}

std::vector<Shape> shapes_for(DType t) {
  if (dtype_block_elems(t) == 32) return {{1, 32}, {13, 96}, {37, 288}, {9, 1024}};
  if (dtype_is_block_quantized(t)) return {{1, 256}, {13, 512}, {37, 768}, {9, 1280}};
  // in: 1 and below one vector, odd, just past 32-element chunks, not a multiple of 16.
  return {{1, 1}, {7, 13}, {37, 100}, {17, 257}, {9, 1000}};
}

TEST(Matmul, MatchesReferenceForEveryDtypeIsaAndBatch) {
  IsaGuard guard;
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    ASSERT_EQ(active_isa(), isa);
    for (DType t : all_dtypes()) {
      for (Shape s : shapes_for(t)) {
        StoredWeight w = make_weight(t, s.out, s.in, seed++);
        for (int64_t n : {1, 2, 3, 5, 8, 17, 64, 300}) {
          std::vector<float> x = random_floats(n * s.in, seed++);
          std::vector<float> y(static_cast<size_t>(n * s.out), NAN);
          matmul(w.view, x.data(), n, y.data(), pool);
          expect_matches_reference(w, effective_x(t, x, n), n, y, describe(t, s, n, isa, pool.size()));
        }
      }
    }
  }
}

// Both paths must be right for every n, not only on their side of the crossover.
TEST(Matmul, BothPathsMatchReferenceForAnyBatch) {
  IsaGuard guard;
  ThreadPool pool(2);
  uint32_t seed = 1000;
  for (PathGuard::Path path : {PathGuard::Gemv, PathGuard::Sgemm}) {
    PathGuard forced(path);
    for (Isa isa : supported_isas()) {
      set_isa(isa);
      for (DType t : all_dtypes()) {
        const Shape s{45, cols_for(t, 201)};
        StoredWeight w = make_weight(t, s.out, s.in, seed++);
        for (int64_t n : {1, 3, 8, 17, 64}) {
          std::vector<float> x = random_floats(n * s.in, seed++);
          std::vector<float> y(static_cast<size_t>(n * s.out), NAN);
          matmul(w.view, x.data(), n, y.data(), pool);
          expect_matches_reference(w, effective_x(t, x, n), n, y,
                                   describe(t, s, n, isa, pool.size()) + " " + path_name(path));
        }
      }
    }
  }
}

// Rows of different tiles, thread chunks and batch sizes must agree bit for bit: a token's logits
// may not depend on how many threads ran or which other rows shared its batch.
TEST(Matmul, SameBitsForOneAndTwoThreadsAndAnyBatch) {
  IsaGuard guard;
  ThreadPool one(1), two(2);
  for (PathGuard::Path path : {PathGuard::Gemv, PathGuard::Sgemm}) {
    PathGuard forced(path);
    for (Isa isa : supported_isas()) {
      set_isa(isa);
      for (DType t : all_dtypes()) {
        // out spans several sgemm tiles and GEMV blocks, with remainders of both.
        const int64_t out = 1203, in = cols_for(t, 131);
        StoredWeight w = make_weight(t, out, in, 99);
        for (int64_t n : {1, 5, 11, 17, 64}) {
          const std::string what = describe(t, {out, in}, n, isa, 2) + " " + path_name(path);
          std::vector<float> x = random_floats(n * in, 7);
          std::vector<float> y1(static_cast<size_t>(n * out)), y2(y1.size());
          matmul(w.view, x.data(), n, y1.data(), one);
          matmul(w.view, x.data(), n, y2.data(), two);
          EXPECT_EQ(y1, y2) << what;
          if (path != PathGuard::Gemv) continue;
          // Decode path: each input row alone gives the same bits as inside the batch.
          for (int64_t g : {int64_t{0}, n / 2, n - 1}) {
            std::vector<float> yg(static_cast<size_t>(out));
            matmul(w.view, x.data() + g * in, 1, yg.data(), two);
            for (int64_t r = 0; r < out; ++r) ASSERT_EQ(yg[r], y1[g * out + r]) << what << " row " << g << " col " << r;
          }
        }
      }
    }
  }
}

// matmul_many shares one pass over the jobs' rows, cut where each thread's weight bytes balance:
// the decode mix (q4_k gate/up beside q5_0 / q8_0 down rows of another width, float weights, a
// job of two rows, jobs with equal inputs) gives every job the bits matmul() gives it alone, for 1-3 threads and every ISA.
TEST(Matmul, ManyEqualsOneByOneWhateverTheCuts) {
  IsaGuard guard;
  struct Spec {
    DType t;
    int64_t out, in, n;
  };
  const std::vector<Spec> specs = {{DType::Q4_K, 96, 512, 1},  {DType::Q4_K, 96, 512, 1}, {DType::Q5_0, 40, 288, 1},
                                   {DType::Q8_0, 200, 288, 1}, {DType::BF16, 24, 100, 1}, {DType::Q6_K, 17, 256, 2},
                                   {DType::Q4_0, 3, 64, 1},    {DType::Q4_K, 8, 512, 1}};
  std::vector<StoredWeight> ws;
  std::vector<std::vector<float>> xs;
  for (size_t k = 0; k < specs.size(); ++k) {
    ws.push_back(make_weight(specs[k].t, specs[k].out, specs[k].in, static_cast<uint32_t>(40 + k)));
    xs.push_back(random_floats(specs[k].n * specs[k].in, static_cast<uint32_t>(80 + k)));
  }
  xs[1] = xs[0];  // equal inputs share one quantised copy; the last q4_k job's differ and must not
  ThreadPool one(1);
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    std::vector<std::vector<float>> want;
    for (size_t k = 0; k < specs.size(); ++k) {
      want.emplace_back(static_cast<size_t>(specs[k].n * specs[k].out));
      matmul(ws[k].view, xs[k].data(), specs[k].n, want.back().data(), one);
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<std::vector<float>> got;
      std::vector<MatmulJob> jobs;
      for (size_t k = 0; k < specs.size(); ++k) got.emplace_back(want[k].size(), std::nanf(""));
      for (size_t k = 0; k < specs.size(); ++k) jobs.push_back({&ws[k].view, xs[k].data(), specs[k].n, got[k].data()});
      matmul_many(jobs, pool);
      for (size_t k = 0; k < specs.size(); ++k)
        EXPECT_EQ(got[k], want[k]) << "job " << k << " " << dtype_name(specs[k].t) << " " << isa_name(isa) << " threads=" << threads;
    }
  }
}

// The SIMD paths must agree with each other closely, not just with the reference; for block-
// quantised weights (exact integer sums, one fixed float order) bit for bit with the scalar kernels.
TEST(Matmul, IsasAgree) {
  IsaGuard guard;
  ThreadPool pool(2);
  const std::vector<Isa> isas = supported_isas();
  if (isas.size() < 2) GTEST_SKIP() << "only the scalar kernels run on this CPU";
  for (DType t : all_dtypes()) {
    const int64_t out = 64, in = 512, n = 3;
    StoredWeight w = make_weight(t, out, in, 5);
    std::vector<float> x = random_floats(n * in, 6);
    std::vector<std::vector<float>> ys;
    for (Isa isa : isas) {
      set_isa(isa);
      ys.emplace_back(static_cast<size_t>(n * out));
      matmul(w.view, x.data(), n, ys.back().data(), pool);
    }
    for (size_t k = 1; k < ys.size(); ++k) {
      if (dtype_is_block_quantized(t)) {
        EXPECT_EQ(ys[k], ys[0]) << dtype_name(t) << " " << isa_name(isas[k]);
        continue;
      }
      for (size_t i = 0; i < ys[0].size(); ++i) EXPECT_NEAR(ys[k][i], ys[0][i], 1e-4) << dtype_name(t) << " " << i;
    }
  }
}

TEST(Matmul, EmptyDimensions) {
  ThreadPool pool(2);
  StoredWeight w = make_weight(DType::BF16, 4, 8, 1);
  std::vector<float> y(8, 5.0f);
  matmul(w.view, nullptr, 0, y.data(), pool);  // n = 0: nothing to do
  EXPECT_EQ(y[0], 5.0f);

  TensorView empty_in = w.view;
  empty_in.shape = {4, 0};
  std::vector<float> x(2);
  matmul(empty_in, x.data(), 2, y.data(), pool);  // empty sums are 0
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

void expect_invalid(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected folio::Error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Matmul, RejectsBadWeightsNamingThem) {
  ThreadPool pool(1);
  std::vector<float> x(64), y(64);
  StoredWeight w = make_weight(DType::F32, 2, 32, 1);
  w.view.name = "blk.3.ffn_up";

  TensorView one_d = w.view;
  one_d.shape = {64};
  expect_invalid([&] { matmul(one_d, x.data(), 1, y.data(), pool); }, "blk.3.ffn_up");
  expect_invalid([&] { matmul(one_d, x.data(), 1, y.data(), pool); }, "[64]");

  TensorView q8 = w.view;
  q8.dtype = DType::Q8_0;
  q8.shape = {1, 48};
  expect_invalid([&] { matmul(q8, x.data(), 1, y.data(), pool); }, "multiple of the block size 32");

  TensorView no_data = w.view;
  no_data.data = nullptr;
  expect_invalid([&] { matmul(no_data, x.data(), 1, y.data(), pool); }, "blk.3.ffn_up' has no data");

  expect_invalid([&] { matmul(w.view, x.data(), -1, y.data(), pool); }, "negative");
}

TEST(CpuFeatures, SetIsaClampsToTheCpu) {
  IsaGuard guard;
  set_isa(Isa::Avx512);
  EXPECT_EQ(active_isa(), best_isa());
  set_isa(Isa::Scalar);
  EXPECT_EQ(active_isa(), Isa::Scalar);
  EXPECT_STREQ(isa_name(Isa::Scalar), "scalar");
  EXPECT_STREQ(isa_name(Isa::Avx2), "avx2");
  EXPECT_STREQ(isa_name(Isa::Avx512), "avx512");
}

}  // namespace
}  // namespace folio::kernels
