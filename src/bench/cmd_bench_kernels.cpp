// folio bench kernels: the decode product (matmul with --inputs activation rows, default one) per weight format, in
// bytes of weights read per second, where kernel claims ("q4_k reads its bytes at bf16's rate")
// were measured with throwaway drivers before.
//
// Per format, two figures:
//   cache   one thread, a matrix of --cache-kb that stays in the core's own cache, multiplied again
//           and again: the rate the kernel's instructions allow (no memory in the way);
//   stream  --threads threads, one matrix of --stream-mb (far larger than the caches) read once
//           per call: the rate memory and the kernel allow together;
//   pieces  the same matrix read as products of --piece-kb each, taken in a scattered order, as a
//           decode step reads its products (Unlimited-OCR: ~84 a token, most of 1-10 MB): what
//           starting a product costs (the hand-off to the threads, each chunk's stream starting
//           cold) shows as the gap to stream.
// The formats are alternated within each of --rounds rounds (this machine's memory speed moves
// between runs, so a ratio between formats holds only inside a round), and every round also
// measures the read bandwidth probe (bandwidth.h). Weights are random rows quantised once and
// repeated to size: the kernels' time does not depend on the values.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/json_output.h"
#include "cmdline/commands.h"
#include "core/error.h"
#include "core/median.h"
#include "core/row_interleave.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"

namespace folio::cli {

namespace {

struct KernelsArgs {
  std::string formats = "bf16,q8_0,q5_0,q4_k,q6_k", json;
  int64_t cols = 1280;  // the Unlimited-OCR decoder's hidden width: its q/k/v, gate and up rows
  int64_t inputs = 1;   // activation rows per product: sequences decoded together
  int64_t cache_kb = 512, stream_mb = 512, piece_kb = 1024;
  int threads = 0, rounds = 3;
  std::string amx = "auto";  // "off": the int8 products on the VNNI kernels even where tiles are granted
  uint64_t seed = 1;
};

std::vector<DType> parse_formats(const std::string& list) {
  std::vector<DType> out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    // The interleaved formats are no file's type (dtype.h), so parse_dtype does not take them: a
    // row format's name with _x16.
    const bool x16 = name.size() > 4 && name.ends_with("_x16");
    std::optional<DType> t = parse_dtype(x16 ? name.substr(0, name.size() - 4) : name);
    if (x16 && t) t = interleaved_dtype(*t);
    if (!t || *t == DType::F32)
      throw_invalid("--formats: '" + name +
                    "' is not a weight format (f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, q6_k, and q4_k, q6_k, q8_0, "
                    "q5_0 with _x16)");
    out.push_back(*t);
  }
  if (out.empty()) throw_invalid("--formats names no format");
  return out;
}

// A [rows, cols] weight of `t` whose rows repeat 64 random rows (quantised once; an interleaved
// format: in its row format, then interleaved).
class BenchWeight {
 public:
  BenchWeight(DType t, int64_t rows, int64_t cols, uint64_t seed) : row_bytes_(dtype_row_bytes(t, cols)) {
    constexpr int64_t kDistinct = 64;
    const int64_t distinct = std::min(rows, kDistinct);
    std::vector<float> src(static_cast<size_t>(distinct * cols));
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 0.02f);
    for (float& v : src) v = normal(rng);
    TensorView f32{"bench", DType::F32, {distinct, cols}, src.data()};
    std::vector<uint8_t> q(row_bytes_ * static_cast<size_t>(distinct));
    convert_tensor(f32, row_dtype(t), q.data());
    bytes_.reset(new uint8_t[row_bytes_ * static_cast<size_t>(rows)]);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(bytes_.get() + row_bytes_ * static_cast<size_t>(r), q.data() + row_bytes_ * static_cast<size_t>(r % distinct), row_bytes_);
    if (dtype_is_interleaved(t)) interleave_rows(row_dtype(t), bytes_.get(), rows, cols, bytes_.get());
    view_ = TensorView{"bench." + std::string(dtype_name(t)), t, {rows, cols}, bytes_.get()};
  }
  double bytes() const { return static_cast<double>(view_.nbytes()); }
  // y = x W^T for n activation rows (decode sizes: n below matmul_gemm_min_rows()).
  void multiply(const float* x, int64_t n, float* y, ThreadPool& pool) const { kernels::matmul(view_, x, n, y, pool); }
  // The same over rows [r0, r0 + rows) only, into y's first n x rows.
  void multiply_rows(int64_t r0, int64_t rows, const float* x, int64_t n, float* y, ThreadPool& pool) const {
    const TensorView piece{view_.name, view_.dtype, {rows, view_.shape[1]}, bytes_.get() + row_bytes_ * static_cast<size_t>(r0)};
    kernels::matmul(piece, x, n, y, pool);
  }
  int64_t rows() const { return view_.shape[0]; }

 private:
  size_t row_bytes_;
  std::unique_ptr<uint8_t[]> bytes_;
  TensorView view_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GB/s of weights read by matmul(w, x, n) on `pool`: the best of `reps` timings of `calls` calls.
double gemv_gbs(const BenchWeight& w, const std::vector<float>& x, int64_t n, std::vector<float>& y, ThreadPool& pool, int calls,
                int reps) {
  w.multiply(x.data(), n, y.data(), pool);  // warm: pages touched, activations sized
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) w.multiply(x.data(), n, y.data(), pool);
    best = std::max(best, w.bytes() * calls / seconds_since(t0) / 1e9);
  }
  return best;
}

// GB/s of weights read by the products of `piece_rows` rows each covering w once, taken in a fixed
// scattered order (a stride coprime with their count), so that no product follows the one beside
// it in memory: the best of `reps` passes.
double pieces_gbs(const BenchWeight& w, int64_t piece_rows, const std::vector<float>& x, int64_t n, std::vector<float>& y,
                  ThreadPool& pool, int reps) {
  const int64_t pieces = w.rows() / piece_rows;
  int64_t stride = pieces / 2 + 1;
  while (std::gcd(stride, pieces) != 1) ++stride;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < pieces; ++i) w.multiply_rows(i * stride % pieces * piece_rows, piece_rows, x.data(), n, y.data(), pool);
    best = std::max(best, w.bytes() / static_cast<double>(w.rows()) * static_cast<double>(pieces * piece_rows) / seconds_since(t0) / 1e9);
  }
  return best;
}

struct FormatRuns {
  std::vector<double> cache_gbs, stream_gbs, pieces_gbs;
};

// Rows filling `bytes`, whole groups of 16 for every format (the interleaved one needs them).
int64_t rows_for(size_t bytes, size_t row_bytes) {
  return std::max<int64_t>(1, static_cast<int64_t>(bytes / row_bytes / kGroupRows)) * kGroupRows;
}

void time_format(DType t, const KernelsArgs& a, ThreadPool& one, ThreadPool& all, FormatRuns& runs) {
  const size_t row_bytes = dtype_row_bytes(t, a.cols);
  const int64_t cache_rows = rows_for(static_cast<size_t>(a.cache_kb) << 10, row_bytes);
  const int64_t stream_rows = rows_for(static_cast<size_t>(a.stream_mb) << 20, row_bytes);
  std::vector<float> x(static_cast<size_t>(a.inputs * a.cols));
  std::mt19937_64 rng(a.seed + 7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(a.inputs * std::max(cache_rows, stream_rows)));
  {
    const BenchWeight cache(t, cache_rows, a.cols, a.seed);
    // About 64 MB of weights per timing: long enough to be steady, short enough for many rounds.
    const int calls = std::max(1, static_cast<int>((64 << 20) / std::max(1.0, cache.bytes())));
    runs.cache_gbs.push_back(gemv_gbs(cache, x, a.inputs, y, one, calls, 3));
  }
  const BenchWeight stream(t, stream_rows, a.cols, a.seed);
  runs.stream_gbs.push_back(gemv_gbs(stream, x, a.inputs, y, all, 1, 3));
  const int64_t piece_rows = std::min(stream_rows, rows_for(static_cast<size_t>(a.piece_kb) << 10, row_bytes));
  runs.pieces_gbs.push_back(pieces_gbs(stream, piece_rows, x, a.inputs, y, all, 3));
  std::fprintf(stderr, "  %-8s cache %6.1f GB/s (1 thread)   stream %6.1f GB/s   pieces %6.1f GB/s (%d threads)\n", dtype_name(t),
               runs.cache_gbs.back(), runs.stream_gbs.back(), runs.pieces_gbs.back(), all.size());
}

int run_kernels(const KernelsArgs& a) {
  const std::vector<DType> formats = parse_formats(a.formats);
  if (a.rounds < 1) throw_invalid("--rounds must be at least 1");
  if (a.cols < 256 || a.cols % 256 != 0) throw_invalid("--cols must be a positive multiple of 256 (every block format's row)");
  if (a.cache_kb < 16) throw_invalid("--cache-kb must be at least 16");
  if (a.stream_mb < 1) throw_invalid("--stream-mb must be at least 1");
  if (a.piece_kb < 16 || a.piece_kb > a.stream_mb * 1024) throw_invalid("--piece-kb must be 16 to --stream-mb's KiB");
  if (a.amx != "auto" && a.amx != "off") throw_invalid("--amx must be auto or off, not '" + a.amx + "'");
  if (a.inputs < 1 || a.inputs >= kernels::matmul_gemm_min_rows())
    throw_invalid("--inputs must be 1 to " + std::to_string(kernels::matmul_gemm_min_rows() - 1) + " (decode sizes; more take the prefill's path)");
  const JsonOutput json_out(a.json);
  // Restores the process's setting on the way out (the tests run this in-process).
  struct Int8Tiles {
    bool before = kernels::int8_amx_active();
    explicit Int8Tiles(bool off) {
      if (off) kernels::set_int8_amx(false);
    }
    ~Int8Tiles() { kernels::set_int8_amx(before); }
  } tiles(a.amx == "off");
  ThreadPool one(1), all(a.threads);
  std::vector<FormatRuns> runs(formats.size());
  std::vector<double> read_gbs;
  for (int round = 0; round < a.rounds; ++round) {
    std::fprintf(stderr, "round %d of %d\n", round + 1, a.rounds);
    for (size_t f = 0; f < formats.size(); ++f) time_format(formats[f], a, one, all, runs[f]);
    read_gbs.push_back(kernels::measure_read_bandwidth_gbs(all, std::max<size_t>(size_t{1} << 20, static_cast<size_t>(a.stream_mb) << 20), 3));
    std::fprintf(stderr, "  read probe %.1f GB/s\n", read_gbs.back());
  }
  nlohmann::json per_format = nlohmann::json::object();
  for (size_t f = 0; f < formats.size(); ++f) {
    const FormatRuns& r = runs[f];
    per_format[dtype_name(formats[f])] = {{"cache_gbs", r.cache_gbs},
                                          {"cache_gbs_median", median(r.cache_gbs)},
                                          {"stream_gbs", r.stream_gbs},
                                          {"stream_gbs_median", median(r.stream_gbs)},
                                          {"pieces_gbs", r.pieces_gbs},
                                          {"pieces_gbs_median", median(r.pieces_gbs)},
                                          {"bytes_per_row", dtype_row_bytes(formats[f], a.cols)}};
    std::printf("%-8s cache %.1f GB/s, stream %.1f GB/s, pieces %.1f GB/s (medians of %d rounds)\n", dtype_name(formats[f]),
                median(r.cache_gbs), median(r.stream_gbs), median(r.pieces_gbs), a.rounds);
  }
  std::printf("read probe %.1f GB/s (median)\n", median(read_gbs));
  const nlohmann::json j = {{"suite", "kernels"},
                            {"isa", kernels::isa_name(kernels::active_isa())},
                            {"threads", all.size()},
                            {"int8_tiles", kernels::int8_amx_active()},
                            {"cols", a.cols},
                            {"inputs", a.inputs},
                            {"cache_kb", a.cache_kb},
                            {"stream_mb", a.stream_mb},
                            {"piece_kb", a.piece_kb},
                            {"rounds", a.rounds},
                            {"read_probe_gbs", read_gbs},
                            {"read_probe_gbs_median", median(read_gbs)},
                            {"formats", per_format}};
  json_out.write(j);
  return 0;
}

}  // namespace

SubRunner add_bench_kernels(CLI::App& app) {
  auto a = std::make_shared<KernelsArgs>();
  CLI::App* k = app.add_subcommand("kernels", "Decode products per weight format, GB/s of weights in cache and streamed");
  k->add_option("--formats", a->formats, "Comma-separated weight formats")->capture_default_str();
  k->add_option("--cols", a->cols, "Elements per weight row (a multiple of 256)")->capture_default_str();
  k->add_option("--inputs", a->inputs, "Activation rows per product (sequences decoded together)")->capture_default_str();
  k->add_option("--cache-kb", a->cache_kb, "Size of the in-cache matrix (one thread)")->capture_default_str();
  k->add_option("--stream-mb", a->stream_mb, "Size of the streamed matrix")->capture_default_str();
  k->add_option("--piece-kb", a->piece_kb, "Size of each product when the streamed matrix is read in pieces")->capture_default_str();
  k->add_option("--threads", a->threads, "Threads of the streamed product (0 = one per core)")->capture_default_str();
  k->add_option("--rounds", a->rounds, "Rounds, the formats alternated in each (medians reported)")->capture_default_str();
  k->add_option("--seed", a->seed, "Seed of the random weights")->capture_default_str();
  k->add_option("--amx", a->amx,
                "auto: the int8 products of several rows on AMX tiles where the CPU grants them (as decode runs them); off: on "
                "the VNNI kernels (FOLIO_AMX=0 for this run)")
      ->capture_default_str();
  k->add_option("--json", a->json, "Output JSON file")->required();
  return {k, [a] { return run_kernels(*a); }};
}

}  // namespace folio::cli
