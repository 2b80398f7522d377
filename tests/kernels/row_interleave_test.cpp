// q4_k and q6_k rows interleaved in groups of 16 (core/row_interleave.h, DType::Q4_K_X16 and
// Q6_K_X16): the layout moves bytes only (back and forth, in place or not), and every product over it
// (decode GEMV on every kernel table, matmul_many, the prefill's sgemm and bf16 paths) gives the bits
// of the same product on the rows, as do its conversions; shapes that are not whole groups and
// formats without the layout are clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/quant_blocks.h"
#include "core/row_interleave.h"
#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/matmul.h"

namespace folio::kernels {
namespace {

using testing::make_weight;
using testing::random_floats;
using testing::all_tables;

constexpr DType kRowFormats[] = {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::Q5_0};

// Random f16 factors 2^-9 .. 2^-1.
uint16_t random_factor(std::mt19937& rng) { return static_cast<uint16_t>(0x1800 + rng() % 0x2000); }

// Rows whose scale bytes are random (q4_k: every 6-bit scale and minimum, top bits included; q6_k:
// every int8 scale, -128 too), which a quantiser's output rarely reaches, and whose factors are
// random finite f16 values (q8_0, q5_0: their d).
testing::StoredWeight random_rows(DType t, int64_t rows, int64_t in, uint32_t seed) {
  testing::StoredWeight w = make_weight(t, rows, in, seed);
  std::mt19937 rng(seed);
  for (int64_t b = 0; b < rows * in / 256 && dtype_block_elems(t) == 256; ++b) {
    if (t == DType::Q4_K) {
      BlockQ4K& blk = reinterpret_cast<BlockQ4K*>(w.bytes.data())[b];
      for (uint8_t& s : blk.scales) s = static_cast<uint8_t>(rng());
      blk.d = random_factor(rng);
      blk.dmin = random_factor(rng);
    } else if (t == DType::Q6_K) {
      BlockQ6K& blk = reinterpret_cast<BlockQ6K*>(w.bytes.data())[b];
      for (int8_t& s : blk.scales) s = static_cast<int8_t>(rng());
      blk.d = random_factor(rng);
    }
  }
  if (t == DType::Q8_0 || t == DType::Q5_0) {
    const size_t bytes = dtype_block_bytes(t);
    for (int64_t b = 0; b < rows * in / 32; ++b) {
      const uint16_t d = random_factor(rng);
      std::memcpy(w.bytes.data() + static_cast<size_t>(b) * bytes, &d, 2);  // both start with d
    }
  }
  return w;
}

std::vector<uint8_t> interleaved(const testing::StoredWeight& w) {
  std::vector<uint8_t> out(w.bytes.size());
  interleave_rows(w.view.dtype, w.bytes.data(), w.view.shape[0], w.view.shape[1], out.data());
  return out;
}

TEST(RowInterleave, LayoutMovesBytesOnlyInPlaceOrNot) {
  for (DType t : kRowFormats) {
    const testing::StoredWeight w = random_rows(t, 48, 768, 3);
    const std::vector<uint8_t> inter = interleaved(w);
    EXPECT_NE(inter, w.bytes);
    std::vector<uint8_t> in_place = w.bytes;
    interleave_rows(t, in_place.data(), 48, 768, in_place.data());
    EXPECT_EQ(in_place, inter);
    std::vector<uint8_t> back(w.bytes.size());
    const size_t row_bytes = dtype_row_bytes(t, 768), group = kGroupRows * row_bytes;
    const int64_t nb = 768 / dtype_block_elems(t);
    for (int g = 0; g < 3; ++g) deinterleave_group(t, inter.data() + g * group, nb, back.data() + g * group, row_bytes);
    EXPECT_EQ(back, w.bytes) << dtype_name(t);
    std::vector<uint8_t> whole(w.bytes.size());
    deinterleave_rows(t, inter.data(), 48, 768, whole.data());
    EXPECT_EQ(whole, w.bytes) << dtype_name(t);
  }
}

// The layout the kernels read (core/row_interleave.h): a code quad of each of the 16 rows per
// 64-byte vector, the scale bytes as planes, the factors last (q6_k) or first (q4_k, q8_0, q5_0).
TEST(RowInterleave, ColumnsHoldTheDocumentedFields) {
  const testing::StoredWeight w6 = random_rows(DType::Q6_K, 16, 256, 4);
  const std::vector<uint8_t> c6 = interleaved(w6);
  const auto* b6 = reinterpret_cast<const BlockQ6K*>(w6.bytes.data());
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(0, std::memcmp(&c6[64 * 9 + 4 * r], b6[r].ql + 36, 4));
    EXPECT_EQ(0, std::memcmp(&c6[2048 + 64 * 3 + 4 * r], b6[r].qh + 12, 4));
    EXPECT_EQ(static_cast<int8_t>(c6[3072 + 16 * 5 + r]), b6[r].scales[5]);
    EXPECT_EQ(0, std::memcmp(&c6[3328 + 2 * r], &b6[r].d, 2));
  }
  const testing::StoredWeight w4 = random_rows(DType::Q4_K, 16, 256, 5);
  const std::vector<uint8_t> c4 = interleaved(w4);
  const auto* b4 = reinterpret_cast<const BlockQ4K*>(w4.bytes.data());
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(0, std::memcmp(&c4[2 * r], &b4[r].d, 2));
    EXPECT_EQ(0, std::memcmp(&c4[32 + 2 * r], &b4[r].dmin, 2));
    EXPECT_EQ(c4[64 + 16 * 7 + r], b4[r].scales[7]);
    EXPECT_EQ(0, std::memcmp(&c4[256 + 64 * 13 + 4 * r], b4[r].qs + 52, 4));
  }
  const testing::StoredWeight w8 = random_rows(DType::Q8_0, 16, 32, 6);
  const std::vector<uint8_t> c8 = interleaved(w8);
  const testing::StoredWeight w5 = random_rows(DType::Q5_0, 16, 32, 7);
  const std::vector<uint8_t> c5 = interleaved(w5);
  for (int r = 0; r < 16; ++r) {
    const uint8_t* b8 = w8.bytes.data() + 34 * r;  // d, then 32 codes
    EXPECT_EQ(0, std::memcmp(&c8[2 * r], b8, 2));
    EXPECT_EQ(0, std::memcmp(&c8[32 + 64 * 5 + 4 * r], b8 + 2 + 20, 4));
    const uint8_t* b5 = w5.bytes.data() + 22 * r;  // d, qh (4 bytes), qs (16)
    EXPECT_EQ(0, std::memcmp(&c5[2 * r], b5, 2));
    EXPECT_EQ(0, std::memcmp(&c5[32 + 4 * r], b5 + 2, 4));
    EXPECT_EQ(0, std::memcmp(&c5[96 + 64 * 3 + 4 * r], b5 + 6 + 12, 4));
  }
}

// Every code at its largest (q4_k 15, q6_k 63), every scale and minimum at its largest (q4_k 63,
// q6_k 127): with activations at +127 each row's block sum S passes 2^24, where its float is
// rounded (the same way on every path).
testing::StoredWeight saturated(DType t, int64_t rows, int64_t in) {
  testing::StoredWeight w = random_rows(t, rows, in, 1);
  for (int64_t b = 0; b < rows * in / 256 && dtype_block_elems(t) == 256; ++b) {
    if (t == DType::Q4_K) {
      BlockQ4K& blk = reinterpret_cast<BlockQ4K*>(w.bytes.data())[b];
      std::memset(blk.scales, 0xff, sizeof(blk.scales));
      std::memset(blk.qs, 0xff, sizeof(blk.qs));
    } else {
      BlockQ6K& blk = reinterpret_cast<BlockQ6K*>(w.bytes.data())[b];
      std::memset(blk.scales, 0x7f, sizeof(blk.scales));
      std::memset(blk.ql, 0xff, sizeof(blk.ql));
      std::memset(blk.qh, 0xff, sizeof(blk.qh));
    }
  }
  for (int64_t b = 0; b < rows * in / 32 && dtype_block_elems(t) == 32; ++b) {
    uint8_t* blk = w.bytes.data() + static_cast<size_t>(b) * dtype_block_bytes(t);
    if (t == DType::Q8_0) std::memset(blk + 2, 0x7f, 32);  // codes 127
    else std::memset(blk + 2, 0xff, 20);                     // q5_0: codes 31 (qh and qs all ones)
  }
  return w;
}

// The interleaved product of rows 16 .. 47 on every table (AMX tiles on and off where the CPU has
// them: int8_amx_active) against the scalar product of the rows, bit for bit.
void expect_tables_match_rows(const testing::StoredWeight& w, int64_t n, const std::vector<float>& x, const char* what) {
  const DType t = w.view.dtype;
  const int64_t rows = w.view.shape[0], in = w.view.shape[1];
  const std::vector<uint8_t> inter = interleaved(w);
  const size_t rb = dtype_row_bytes(t, in);
  const int64_t block = dtype_block_elems(t), blocks = in / block;
  const size_t act = block == 256 ? sizeof(ActQ8K) : sizeof(ActQ8);
  std::vector<uint8_t> xq(static_cast<size_t>(n * blocks) * act);
  for (int64_t g = 0; g < n; ++g) {
    uint8_t* row = xq.data() + static_cast<size_t>(g * blocks) * act;
    if (block == 256) quantize_act_q8k(x.data() + g * in, reinterpret_cast<ActQ8K*>(row), in);
    else quantize_act_q8(x.data() + g * in, reinterpret_cast<ActQ8*>(row), in);
  }
  std::vector<float> want(static_cast<size_t>(n * rows));
  const int plain = static_cast<int>(t) - static_cast<int>(DType::Q8_0);
  const int x16 = static_cast<int>(*interleaved_dtype(t)) - static_cast<int>(DType::Q8_0);
  detail::scalar_table().qgemv[plain](w.bytes.data(), rb, in, 0, rows, xq.data(), n, want.data(), rows);
  for (bool amx : {true, false}) {
    set_int8_amx(amx);
    for (const detail::KernelTable* table : all_tables()) {
      std::vector<float> y(want.size(), -1.0f);
      table->qgemv[x16](inter.data(), rb, in, 16, rows, xq.data(), n, y.data(), rows);
      for (int64_t g = 0; g < n; ++g) {
        EXPECT_EQ(y[g * rows], -1.0f) << "a row outside the range was written";
        EXPECT_EQ(0, std::memcmp(y.data() + g * rows + 16, want.data() + g * rows + 16, 32 * sizeof(float)))
            << dtype_name(t) << " " << what << ": blocks " << blocks << " n " << n << " activation row " << g << " amx " << amx;
      }
    }
  }
  set_int8_amx(true);
}

TEST(RowInterleave, EveryTableGivesTheRowProductsBits) {
  if (!int8_amx_active()) std::printf("note: no AMX int8 tiles here; the VNNI and row kernels only\n");
  for (DType t : kRowFormats) {
    uint32_t seed = 11;
    // Blocks of 32 also in rows whose last batch of 8 blocks is short (96: 3 blocks, 896: 28).
    for (int64_t in : {256, 512, 1280, 96, 896}) {
      if (in % dtype_block_elems(t) != 0) continue;
      const int64_t rows = 48;
      const testing::StoredWeight w = random_rows(t, rows, in, seed++);
      // 16 activation rows fill a tile; 19 take a second pass over the weights.
      for (int64_t n : {1, 2, 3, 4, 5, 16, 19}) expect_tables_match_rows(w, n, random_floats(n * in, seed++), "random");
    }
    for (int64_t n : {1, 3, 4}) {
      expect_tables_match_rows(saturated(t, 48, 512), n, std::vector<float>(n * 512, 1.0f), "saturated");
      expect_tables_match_rows(saturated(t, 48, 512), n, std::vector<float>(n * 512, -1.0f), "saturated, negative");
    }
  }
}

// The interleaved twin of a weight: the same shape, its own bytes.
struct Twin {
  std::vector<uint8_t> bytes;
  TensorView view;
  explicit Twin(const testing::StoredWeight& w) : bytes(interleaved(w)), view(w.view) {
    view.dtype = *interleaved_dtype(w.view.dtype);
    view.data = bytes.data();
  }
};

TEST(RowInterleave, MatmulOverTheLayoutGivesMatmulsBits) {
  testing::IsaGuard guard;
  ThreadPool pool(2);
  for (DType t : kRowFormats) {
    for (Isa isa : testing::supported_isas()) {
      const testing::StoredWeight w = random_rows(t, 64, 1280, 5);
      const Twin twin(w);
      set_isa(isa);
      // Decode (GEMV) sizes, and prefill sizes on the sgemm path and, where the CPU has it, bf16.
      for (int64_t n : {1, 3, 40}) {
        for (GemmPrecision p : {GemmPrecision::F32, GemmPrecision::Bf16}) {
          if (p == GemmPrecision::Bf16 && (!bf16_gemm_supported() || n < matmul_gemm_min_rows())) continue;
          const std::vector<float> x = random_floats(n * 1280, 9);
          std::vector<float> want(static_cast<size_t>(n * 64)), got(want.size());
          matmul(w.view, x.data(), n, want.data(), pool, p);
          matmul(twin.view, x.data(), n, got.data(), pool, p);
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << dtype_name(t) << " " << isa_name(isa) << " n " << n << " " << gemm_precision_name(p);
        }
      }
    }
  }
}

// matmul_many fuses decode jobs into one pass cut across the threads: interleaved weights beside
// other formats (rows of other counts before them) give each job's matmul bits.
TEST(RowInterleave, FusedJobsGiveEachProductsBits) {
  ThreadPool pool(2);
  for (DType t : kRowFormats) {
    const testing::StoredWeight rows = random_rows(t, 96, 512, 21);
    const Twin twin(rows);
    const testing::StoredWeight q8 = make_weight(DType::Q8_0, 37, 512, 22);
    const std::vector<float> x = random_floats(2 * 512, 23);
    std::vector<float> y8(2 * 37), yt(2 * 96), want8(y8.size()), wantt(yt.size());
    const MatmulJob jobs[] = {{&q8.view, x.data(), 2, y8.data()}, {&twin.view, x.data(), 2, yt.data()}};
    matmul_many(jobs, pool);
    matmul(q8.view, x.data(), 2, want8.data(), pool);
    matmul(rows.view, x.data(), 2, wantt.data(), pool);
    EXPECT_EQ(0, std::memcmp(y8.data(), want8.data(), y8.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(yt.data(), wantt.data(), yt.size() * sizeof(float))) << dtype_name(t);
  }
}

TEST(RowInterleave, ConvertsByGroupsToTheRowsValues) {
  for (DType t : kRowFormats) {
    const testing::StoredWeight w = random_rows(t, 32, 512, 31);
    const Twin twin(w);
    EXPECT_EQ(to_f32_vector(twin.view), to_f32_vector(w.view));
    std::vector<uint8_t> q8(32 * dtype_row_bytes(DType::Q8_0, 512)), want(q8.size());
    convert_tensor(twin.view, DType::Q8_0, q8.data());
    convert_tensor(w.view, DType::Q8_0, want.data());
    EXPECT_EQ(q8, want);
    std::vector<float> out(512);
    EXPECT_THROW(convert_to_f32(twin.view.dtype, twin.bytes.data(), out.data(), 512), Error);
  }
}

TEST(RowInterleave, ShapesThatDoNotFitAreClearErrors) {
  std::vector<uint8_t> bytes(24 * 144);
  try {
    interleave_rows(DType::Q5_K, bytes.data(), 16, 256, bytes.data());
    FAIL() << "q5_k was interleaved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("q5_k has no interleaved layout"), std::string::npos) << e.what();
  }
  try {
    interleave_rows(DType::Q4_K, bytes.data(), 24, 256, bytes.data());
    FAIL() << "24 rows were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("24 rows is not a multiple of 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(interleave_rows(DType::Q4_K, bytes.data(), 16, 300, bytes.data()), Error);
  // A matmul over a q4_k_x16 view of 24 rows is refused before anything is read or written.
  ThreadPool pool(1);
  TensorView v{"odd", DType::Q4_K_X16, {24, 256}, bytes.data()};
  std::vector<float> x(256, 1.0f), y(24, -1.0f);
  try {
    matmul(v, x.data(), 1, y.data(), pool);
    FAIL() << "24 interleaved rows were multiplied";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not whole groups of 16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(y, std::vector<float>(24, -1.0f));
  // The same in matmul_many's fused decode pass, which validates its jobs on its own.
  const MatmulJob jobs[] = {{&v, x.data(), 1, y.data()}};
  EXPECT_THROW(matmul_many(jobs, pool), Error);
  EXPECT_EQ(y, std::vector<float>(24, -1.0f));
}

}  // namespace
}  // namespace folio::kernels
