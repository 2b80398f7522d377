// Scheduler: continuous batching gives every request exactly the tokens Generator gives it alone,
// respects the batch size and the KV budget, frees KV on cancel, and refuses work it cannot queue.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kv/kv_dtype.h"
#include "kv/sequence_kv.h"
#include "runtime/generator.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "runtime/default_model.h"
#include "runtime/ocr_mini.h"
#include "runtime/ocr_pipeline.h"
#include "runtime/ocr_sequence.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

// Results delivered by on_done, waited for from the test thread.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<RequestId, SequenceResult> done;
  std::map<int, std::vector<int32_t>> streamed;  // by the test's own request index

  SequenceRequest wrap(SequenceRequest r, int index) {
    r.on_token = [this, index](int32_t t) {
      std::lock_guard lk(mu);
      streamed[index].push_back(t);
    };
    r.on_done = [this](const SequenceResult& res) {
      std::lock_guard lk(mu);
      done[res.id] = res;
      cv.notify_all();
    };
    return r;
  }
  SequenceResult wait(RequestId id) {
    std::unique_lock lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(60), [&] { return done.count(id) > 0; })) << "request " << id << " never finished";
    return done[id];
  }
};

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("folio_scheduler_test_" + std::to_string(getpid())));
    write_random_checkpoint(preset_config("llama", "tiny"), dir_->string(), 11, DType::F32);
    model_ = new LoadedModel(load_model(dir_->string(), false));
    // Per-row results independent of the batch (GEMV path for every row count): the condition under
    // which batching must not change a single token.
    saved_gemm_rows_ = kernels::matmul_gemm_min_rows();
    kernels::set_matmul_gemm_min_rows(int64_t{1} << 40);
  }
  static void TearDownTestSuite() {
    kernels::set_matmul_gemm_min_rows(saved_gemm_rows_);
    delete model_;
    fs::remove_all(*dir_);
    delete dir_;
  }

  static Decoder& dec() { return *model_->decoder; }
  static KVLayout layout() { return dec().kv_layout(DType::F32); }

  static std::vector<int32_t> random_prompt(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> p{0};  // BOS
    for (int i = 1; i < n; ++i) p.push_back(2 + static_cast<int32_t>(rng() % 500));
    return p;
  }

  // What Generator gives this request alone, in its own pool.
  static GenerationResult alone(const SequenceRequest& r, KVPolicy policy, Decoder& d = dec()) {
    ThreadPool threads(1);
    KVBlockPool pool(d.kv_layout(DType::F32), 0);
    Generator gen(d, pool, threads);
    GenerationOptions o;
    o.policy = policy;
    o.max_tokens = r.max_tokens;
    o.sampling = r.sampling;
    o.no_repeat_ngram = r.no_repeat_ngram;
    o.no_repeat_window = r.no_repeat_window;
    return gen.generate(r.prompt, o);
  }

  static fs::path* dir_;
  static LoadedModel* model_;
  static int64_t saved_gemm_rows_;
};
fs::path* SchedulerTest::dir_ = nullptr;
LoadedModel* SchedulerTest::model_ = nullptr;
int64_t SchedulerTest::saved_gemm_rows_ = 0;

TEST_F(SchedulerTest, ConcurrentRequestsGetTheirAloneTokens) {
  for (KVPolicy policy : {KVPolicy{KVPolicyKind::RSwa, 4}, KVPolicy{KVPolicyKind::Full, 4}}) {
    SCOPED_TRACE(policy.name());
    std::vector<SequenceRequest> reqs;
    for (int i = 0; i < 6; ++i) {
      SequenceRequest r;
      r.prompt = random_prompt(3 + 7 * i, 100 + static_cast<uint32_t>(i));  // 3..38 tokens
      r.max_tokens = 6 + 3 * i;
      if (i == 2) r.sampling = {0.9f, 0, 0.95f, 1234};  // sampled: same seed, same draws
      if (i == 4) r.no_repeat_ngram = 2, r.no_repeat_window = 16;
      reqs.push_back(r);
    }
    std::vector<GenerationResult> expect;
    for (const auto& r : reqs) expect.push_back(alone(r, policy));

    ThreadPool threads(2);
    KVBlockPool pool(layout(), 0);
    Collector c;
    std::vector<RequestId> ids(reqs.size());
    {
      // Chunk 8: long prompts are prefilled over several steps while the others decode.
      Scheduler s(dec(), pool, threads, {policy, 3, 8, 16, 16});
      // Submitted from two threads at once.
      std::thread other([&] {
        for (size_t i = 1; i < reqs.size(); i += 2) ids[i] = s.submit(c.wrap(reqs[i], static_cast<int>(i))).id;
      });
      for (size_t i = 0; i < reqs.size(); i += 2) ids[i] = s.submit(c.wrap(reqs[i], static_cast<int>(i))).id;
      other.join();
      for (size_t i = 0; i < reqs.size(); ++i) {
        SequenceResult r = c.wait(ids[i]);
        EXPECT_EQ(r.tokens, expect[i].tokens) << "request " << i;
        EXPECT_EQ(r.stop_reason, expect[i].stop_reason) << "request " << i;
        EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(reqs[i].prompt.size()));
        std::lock_guard lk(c.mu);
        EXPECT_EQ(c.streamed[static_cast<int>(i)], r.tokens) << "on_token saw other tokens than the result";
      }
      SchedulerStats st = s.stats();
      // Batched, and never more than the limit. Not exactly 3: on a loaded machine the short
      // requests can finish before the submitting threads have handed in a third (seen once in CI).
      EXPECT_GE(st.max_batch_seen, 2);
      EXPECT_LE(st.max_batch_seen, 3);
      EXPECT_EQ(st.running, 0);
      EXPECT_EQ(st.queued, 0);
      EXPECT_EQ(st.kv_bytes_in_use, 0u);
      uint64_t prompt_total = 0, gen_total = 0;
      for (size_t i = 0; i < reqs.size(); ++i) prompt_total += reqs[i].prompt.size(), gen_total += expect[i].tokens.size();
      EXPECT_EQ(st.prompt_tokens, prompt_total);
      EXPECT_EQ(st.generated_tokens, gen_total);
    }
    EXPECT_EQ(pool.bytes_in_use(), 0u);
  }
}

// Synchronous mode: the caller's thread runs the steps, so the batch is exactly what was submitted
// (no race with a scheduler thread), and a request the pool cannot hold (bytes held outside the
// scheduler, nothing running to free them) ends with "error" instead of waiting for ever.
TEST_F(SchedulerTest, SynchronousRunBatchesWhatWasSubmittedAndNeverHangs) {
  const KVPolicy policy{KVPolicyKind::RSwa, 4};
  std::vector<SequenceRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    SequenceRequest r;
    r.prompt = random_prompt(5 + 6 * i, 300 + static_cast<uint32_t>(i));
    r.max_tokens = 5 + 2 * i;
    reqs.push_back(r);
  }
  ThreadPool threads(2);
  KVBlockPool pool(layout(), 0);
  Collector c;
  SchedulerOptions so{policy, 3, 8, 16, 16};
  so.synchronous = true;
  Scheduler s(dec(), pool, threads, so);
  std::vector<RequestId> ids;
  for (size_t i = 0; i < reqs.size(); ++i) ids.push_back(s.submit(c.wrap(reqs[i], static_cast<int>(i))).id);
  EXPECT_TRUE(c.done.empty());  // nothing runs until the caller drives it
  s.run_until_idle();
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(c.done.at(ids[i]).tokens, alone(reqs[i], policy).tokens) << i;
  EXPECT_EQ(s.stats().max_batch_seen, 3);
  EXPECT_EQ(pool.bytes_in_use(), 0u);

  // A pool with room for one request's worst case, most of it held by a sequence of its own.
  const size_t need = s.kv_bytes_needed(static_cast<int64_t>(reqs[3].prompt.size()), reqs[3].max_tokens);
  KVBlockPool small(layout(), need);
  SequenceKV outside(small, 999, policy, so.block_tokens);
  const std::vector<int32_t> held = random_prompt(5, 9);  // one block per layer
  Decoder::Input in;
  in.kv = &outside;
  in.tokens = held;
  in.reference = true;
  std::vector<float> logits(static_cast<size_t>(dec().config().vocab));
  dec().forward({&in, 1}, logits.data(), threads);
  Scheduler tight(dec(), small, threads, so);
  const RequestId id = tight.submit(c.wrap(reqs[3], 3)).id;
  tight.run_until_idle();
  EXPECT_EQ(c.done.at(id).stop_reason, "error");
  EXPECT_NE(c.done.at(id).error.find("cannot hold"), std::string::npos) << c.done.at(id).error;
}

TEST_F(SchedulerTest, EmbeddingPromptEqualsTokenPrompt) {
  SequenceRequest r;
  r.prompt = random_prompt(20, 7);
  r.max_tokens = 10;
  auto rows = std::make_shared<std::vector<float>>(r.prompt.size() * static_cast<size_t>(dec().config().hidden));
  for (size_t i = 0; i < r.prompt.size(); ++i) dec().embed(r.prompt[i], rows->data() + i * static_cast<size_t>(dec().config().hidden));
  KVPolicy policy{KVPolicyKind::RSwa, 8};
  GenerationResult expect = alone(r, policy);
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Scheduler s(dec(), pool, threads, {policy, 2, 6, 4, 16});
  Collector c;
  SequenceRequest e = r;
  e.prompt.clear();
  e.reference.push_back(ReferencePart::rows(std::vector<int32_t>(r.prompt.size(), 0), *rows));
  RequestId a = s.submit(c.wrap(e, 0)).id;
  RequestId b = s.submit(c.wrap(r, 1)).id;
  EXPECT_EQ(c.wait(a).tokens, expect.tokens);
  EXPECT_EQ(c.wait(b).tokens, expect.tokens);
}

// An OCR-shaped request: token parts and lazily produced embedding parts, a feed-back hook whose
// rows depend on everything generated so far (as the mini model's position codes do), and the
// n-gram guard, batched with other requests under small prefill chunks: the tokens Generator gives.
TEST_F(SchedulerTest, ReferencePartsAndEmbedHookMatchGenerator) {
  const int64_t H = dec().config().hidden;
  auto rows_of = [&](const std::vector<int32_t>& ids, float scale) {
    std::vector<float> rows(ids.size() * static_cast<size_t>(H));
    for (size_t i = 0; i < ids.size(); ++i) {
      dec().embed(ids[i], rows.data() + i * static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k) rows[i * static_cast<size_t>(H) + static_cast<size_t>(k)] *= scale;
    }
    return rows;
  };
  const std::vector<int32_t> head = random_prompt(3, 21), image = random_prompt(13, 22), tail = random_prompt(5, 23);
  std::atomic<int> produced{0};
  auto make_parts = [&] {
    std::vector<ReferencePart> parts;
    parts.push_back(ReferencePart::tokens(head));
    parts.push_back(ReferencePart::lazy(std::vector<int32_t>(image.size(), 1), [&, image] {
      ++produced;
      return rows_of(image, 1.5f);
    }));
    parts.push_back(ReferencePart::tokens(tail));
    return parts;
  };
  // The hook: the token's embedding plus a code of how many tokens and what sum came before.
  auto make_hook = [&] {
    return [&, count = 0, sum = int64_t{0}](int32_t tok, float* row) mutable {
      dec().embed(tok, row);
      ++count;
      sum += tok;
      for (int64_t k = 0; k < H; ++k) row[k] += 0.05f * static_cast<float>(std::sin(0.3 * count * (k + 1) + 0.001 * static_cast<double>(sum)));
    };
  };
  KVPolicy policy{KVPolicyKind::RSwa, 4};
  ThreadPool t1(1);
  KVBlockPool alone_pool(layout(), 0);
  Generator gen(dec(), alone_pool, t1);
  GenerationOptions o;
  o.policy = policy;
  o.max_tokens = 24;
  o.no_repeat_ngram = 3;
  o.no_repeat_window = 32;
  o.embed_token = make_hook();
  const std::vector<ReferencePart> parts = make_parts();
  GenerationResult expect = gen.generate(parts, o);
  ASSERT_EQ(expect.tokens.size(), 24u);
  // The hook matters: without it (ids fed) the tokens differ.
  GenerationOptions plain = o;
  plain.embed_token = nullptr;
  ASSERT_NE(gen.generate(parts, plain).tokens, expect.tokens) << "the test hook does not change decoding";
  produced = 0;

  ThreadPool threads(2);
  KVBlockPool pool(layout(), 0);
  Collector c;
  std::vector<RequestId> ids;
  {
    Scheduler s(dec(), pool, threads, {policy, 4, 5, 16, 16});  // chunks of 5 split the image part
    SequenceRequest other;
    other.prompt = random_prompt(17, 24);
    other.max_tokens = 20;
    for (int i = 0; i < 3; ++i) {
      SequenceRequest r;
      r.reference = make_parts();
      r.embed_token = make_hook();
      r.max_tokens = 24;
      r.no_repeat_ngram = 3;
      r.no_repeat_window = 32;
      ids.push_back(s.submit(c.wrap(std::move(r), i)).id);
    }
    RequestId oid = s.submit(c.wrap(other, 9)).id;
    for (RequestId id : ids) {
      SequenceResult got = c.wait(id);
      EXPECT_EQ(got.tokens, expect.tokens);
      EXPECT_EQ(got.prompt_tokens, static_cast<int64_t>(head.size() + image.size() + tail.size()));
    }
    EXPECT_EQ(c.wait(oid).tokens, alone(other, policy).tokens);
    EXPECT_GE(s.stats().max_batch_seen, 2);
  }
  EXPECT_EQ(produced.load(), 3);  // each lazy part produced exactly once per request
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

// The shipped mini OCR model on a real page: the scheduler decodes what run_ocr decodes.
TEST_F(SchedulerTest, MiniOcrPageMatchesRunOcr) {
  std::unique_ptr<MiniOcrModel> m = MiniOcrModel::load(shipped_path("models/folio-mini-ocr"));
  const OcrPages pages = OcrPages::open({std::string(FOLIO_SOURCE_DIR) + "/examples/sample-1page.pdf"}, "", m->pdf_dpi());
  ThreadPool threads(1);
  OcrOptions opt;
  opt.kv_dtype = DType::F32;
  OcrResult want = run_ocr(*m, pages, opt, threads);
  ASSERT_GT(want.tokens.size(), 20u);

  KVBlockPool pool(m->decoder().kv_layout(DType::F32), 0);
  Collector c;
  std::vector<RequestId> ids;
  {
    Scheduler s(m->decoder(), pool, threads, {opt.policy, 4, 256, 8, 16});
    // Both prepared before either is submitted, so they run side by side.
    std::vector<OcrPass> passes;
    for (int i = 0; i < 2; ++i) passes.push_back(m->prepare(pages, 0, 1, VisionMode::Base, threads, {}));
    for (int i = 0; i < 2; ++i)
      ids.push_back(s.submit(c.wrap(ocr_sequence_request(std::move(passes[static_cast<size_t>(i)]), m->max_output_tokens(1)), i)).id);
    for (RequestId id : ids) {
      SequenceResult got = c.wait(id);
      EXPECT_EQ(got.tokens, want.tokens);
      EXPECT_EQ(got.stop_reason, want.stats.stop_reasons.at(0));
    }
    EXPECT_EQ(s.stats().max_batch_seen, 2);
  }
}

TEST_F(SchedulerTest, BrokenEmbeddingPartEndsOnlyItsRequest) {
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  KVPolicy policy{KVPolicyKind::RSwa, 4};
  Scheduler s(dec(), pool, threads, {policy, 4, 64, 8, 16});
  Collector c;
  SequenceRequest bad;
  bad.reference.push_back(ReferencePart::lazy({1, 1, 1}, [] { return std::vector<float>(5, 0.f); }));
  bad.max_tokens = 4;
  SequenceRequest good;
  good.prompt = random_prompt(6, 30);
  good.max_tokens = 4;
  RequestId b = s.submit(c.wrap(bad, 0)).id;
  RequestId g = s.submit(c.wrap(good, 1)).id;
  SequenceResult rb = c.wait(b);
  EXPECT_EQ(rb.stop_reason, "error");
  EXPECT_NE(rb.error.find("produced 5 values"), std::string::npos) << rb.error;
  EXPECT_EQ(c.wait(g).tokens, alone(good, policy).tokens);
}

TEST_F(SchedulerTest, StopsAtEosLikeGenerator) {
  SequenceRequest r;
  r.prompt = random_prompt(9, 3);
  r.max_tokens = 12;
  KVPolicy policy{KVPolicyKind::RSwa, 4};
  GenerationResult free_run = alone(r, policy);
  ASSERT_EQ(free_run.stop_reason, "length");
  // The same weights with EOS = the 5th token greedy decoding produces.
  ModelConfig cfg = dec().config();
  cfg.eos_id = free_run.tokens[4];
  Decoder eos_dec(cfg, *model_->weights, WeightNaming::HuggingFace);
  GenerationResult expect = alone(r, policy, eos_dec);
  ASSERT_EQ(expect.stop_reason, "eos");
  ThreadPool threads(1);
  KVBlockPool pool(eos_dec.kv_layout(DType::F32), 0);
  Scheduler s(eos_dec, pool, threads, {policy, 2, 64, 4, 16});
  Collector c;
  SequenceResult got = c.wait(s.submit(c.wrap(r, 0)).id);
  EXPECT_EQ(got.stop_reason, "eos");
  EXPECT_EQ(got.tokens, expect.tokens);
  EXPECT_EQ(got.tokens.back(), cfg.eos_id);
  EXPECT_LE(got.tokens.size(), 5u);
}

TEST_F(SchedulerTest, KVBudgetLimitsAdmissionAndIsNeverExceeded) {
  KVPolicy policy{KVPolicyKind::Full, 4};
  ThreadPool threads(1);
  // Room for exactly two requests' worst case.
  KVBlockPool probe(layout(), 0);
  const int64_t P = 20, N = 15;
  const size_t one = Scheduler(dec(), probe, threads, {policy, 4, 64, 8, 16}).kv_bytes_needed(P, N);
  // Full policy, blocks of 16 rows: ceil((20 + 14) / 16) = 3 blocks per layer, K and V.
  EXPECT_EQ(one, static_cast<size_t>(dec().config().n_layers) * 3 * probe.block_bytes(16));
  KVBlockPool pool(layout(), 2 * one);
  Collector c;
  std::vector<SequenceRequest> reqs;
  std::vector<RequestId> ids;
  {
    Scheduler s(dec(), pool, threads, {policy, 4, 64, 8, 16});
    for (int i = 0; i < 5; ++i) {
      SequenceRequest r;
      r.prompt = random_prompt(P, 40 + static_cast<uint32_t>(i));
      r.max_tokens = N;
      reqs.push_back(r);
      ids.push_back(s.submit(c.wrap(r, i)).id);
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      SequenceResult got = c.wait(ids[i]);
      EXPECT_EQ(got.tokens, alone(reqs[i], policy).tokens) << i;
    }
    EXPECT_EQ(s.stats().max_batch_seen, 2);  // the batch limit (4) allows more; the budget does not
  }
  EXPECT_LE(pool.peak_bytes(), 2 * one);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

// --kv-keep: once a running sequence's reference is compressed, admission counts what it holds, not
// its uncompressed worst case: in a pool with room for one and a half uncompressed requests, the
// next request starts while the first decodes (without compression they run one at a time). Each
// gets the tokens Generator gives it alone with the same policy.
TEST_F(SchedulerTest, AdmissionCountsACompressedReferenceAtItsCompressedSize) {
  ThreadPool threads(1);
  const int64_t P = 64, N = 40;
  for (const double keep : {1.0, 0.25}) {
    SCOPED_TRACE(keep);
    KVPolicy policy{KVPolicyKind::RSwa, 8};
    policy.keep = keep;
    policy.observe = 4;
    KVBlockPool probe(layout(), 0);
    const size_t one = Scheduler(dec(), probe, threads, {policy, 4, 64, 8, 16}).kv_bytes_needed(P, N);
    KVBlockPool pool(layout(), one + one / 2);
    Collector c;
    std::vector<SequenceRequest> reqs;
    std::vector<RequestId> ids;
    {
      Scheduler s(dec(), pool, threads, {policy, 4, 64, 8, 16});
      for (int i = 0; i < 3; ++i) {
        SequenceRequest r;
        r.prompt = random_prompt(static_cast<int>(P), 70 + static_cast<uint32_t>(i));
        r.max_tokens = N;
        reqs.push_back(r);
        ids.push_back(s.submit(c.wrap(r, i)).id);
      }
      for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(c.wait(ids[i]).tokens, alone(reqs[i], policy).tokens) << i;
      EXPECT_EQ(s.stats().max_batch_seen, keep < 1 ? 2 : 1);
    }
    EXPECT_LE(pool.peak_bytes(), one + one / 2);
    EXPECT_EQ(pool.bytes_in_use(), 0u);
  }
}

TEST_F(SchedulerTest, RequestLargerThanTheBudgetIsRefusedAtOnce) {
  KVPolicy policy{KVPolicyKind::RSwa, 8};
  ThreadPool threads(1);
  KVBlockPool probe(layout(), 0);
  const size_t need = Scheduler(dec(), probe, threads, {policy, 4, 64, 8, 16}).kv_bytes_needed(10, 5);
  KVBlockPool pool(layout(), need - 1);
  Scheduler s(dec(), pool, threads, {policy, 4, 64, 8, 16});
  SequenceRequest r;
  r.prompt = random_prompt(10, 1);
  r.max_tokens = 5;
  Submission sub = s.submit(r);
  EXPECT_EQ(sub.rejected, Rejection::ExceedsKVBudget);
  EXPECT_NE(sub.message.find("KV budget"), std::string::npos) << sub.message;
}

TEST_F(SchedulerTest, CancelFreesTheSequencesKVAtOnce) {
  KVPolicy policy{KVPolicyKind::RSwa, 4};
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Scheduler s(dec(), pool, threads, {policy, 4, 64, 8, 16});
  Collector c;
  // Two long requests; the first cancels itself from its 3rd token on (callbacks may call cancel).
  SequenceRequest keep, drop;
  keep.prompt = random_prompt(10, 5);
  keep.max_tokens = 1000;
  drop.prompt = random_prompt(30, 6);
  drop.max_tokens = 1000;
  RequestId drop_id = -1;
  std::mutex m;
  size_t bytes_before = 0;
  int seen = 0;
  SequenceRequest d = c.wrap(drop, 0);
  auto inner = d.on_token;
  d.on_token = [&](int32_t t) {
    inner(t);
    if (++seen == 3) {
      bytes_before = s.stats().kv_bytes_in_use;
      std::lock_guard lk(m);
      s.cancel(drop_id);
    }
  };
  {
    std::lock_guard lk(m);  // drop_id is set before the callback can use it
    s.submit(c.wrap(keep, 1));
    drop_id = s.submit(d).id;
  }
  SequenceResult got = c.wait(drop_id);
  EXPECT_EQ(got.stop_reason, "cancelled");
  EXPECT_EQ(got.tokens.size(), 3u);  // freed before the next forward pass
  // What is left is exactly the other sequence: its reference (10 tokens, the block shrunk to them
  // when generation began) + a ring of 4, per layer.
  const size_t L = static_cast<size_t>(dec().config().n_layers);
  const size_t keep_bytes = L * (pool.block_bytes(10) + pool.block_bytes(4));
  const size_t drop_bytes = L * (pool.block_bytes(16) + pool.block_bytes(14) + pool.block_bytes(4));
  EXPECT_EQ(bytes_before, keep_bytes + drop_bytes);
  SchedulerStats st = s.stats();
  EXPECT_EQ(st.kv_bytes_in_use, keep_bytes);
  EXPECT_EQ(st.running, 1);
  s.stop();  // the other one ends too
  EXPECT_EQ(c.done.size(), 2u);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

TEST_F(SchedulerTest, FullQueueRefusesAndQueuedRequestsRunLater) {
  KVPolicy policy{KVPolicyKind::RSwa, 4};
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Scheduler s(dec(), pool, threads, {policy, 1, 64, 2, 16});
  Collector c;
  std::mutex m;
  std::condition_variable cv;
  bool started = false;
  SequenceRequest a;
  a.prompt = random_prompt(5, 9);
  a.max_tokens = 1000;
  SequenceRequest wa = c.wrap(a, 0);
  auto inner = wa.on_token;
  wa.on_token = [&](int32_t t) {
    inner(t);
    std::lock_guard lk(m);
    started = true;
    cv.notify_all();
  };
  RequestId ida = s.submit(wa).id;
  {
    std::unique_lock lk(m);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(30), [&] { return started; }));
  }
  SequenceRequest small;
  small.prompt = random_prompt(4, 10);
  small.max_tokens = 3;
  Submission b = s.submit(c.wrap(small, 1));
  Submission c2 = s.submit(c.wrap(small, 2));
  Submission d = s.submit(c.wrap(small, 3));
  EXPECT_TRUE(b.accepted());
  EXPECT_TRUE(c2.accepted());
  EXPECT_EQ(d.rejected, Rejection::QueueFull);
  EXPECT_NE(d.message.find("queue is full"), std::string::npos);
  EXPECT_EQ(s.stats().queued, 2);
  s.cancel(ida);
  EXPECT_EQ(c.wait(ida).stop_reason, "cancelled");
  EXPECT_EQ(c.wait(b.id).stop_reason, "length");
  EXPECT_EQ(c.wait(c2.id).tokens, alone(small, policy).tokens);
}

TEST_F(SchedulerTest, DeadlineEndsARequestWithTimeout) {
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Scheduler s(dec(), pool, threads, {KVPolicy{KVPolicyKind::RSwa, 4}, 2, 64, 8, 16});
  Collector c;
  SequenceRequest r;
  r.prompt = random_prompt(5, 2);
  r.max_tokens = 1000;
  r.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
  SequenceResult got = c.wait(s.submit(c.wrap(r, 0)).id);
  EXPECT_EQ(got.stop_reason, "timeout");
  EXPECT_LT(got.tokens.size(), 1000u);
  EXPECT_EQ(s.stats().kv_bytes_in_use, 0u);
}

TEST_F(SchedulerTest, BadRequestsThrowInvalidInput) {
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Scheduler s(dec(), pool, threads, {});
  auto message = [&](SequenceRequest r) -> std::string {
    try {
      s.submit(std::move(r));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidInput);
      return e.what();
    }
    return "";
  };
  SequenceRequest r;
  EXPECT_NE(message(r).find("prompt is empty"), std::string::npos);
  r.prompt = {0, 600};
  EXPECT_NE(message(r).find("outside the vocabulary"), std::string::npos);
  r.prompt = {0, 5};
  r.max_tokens = -1;
  EXPECT_NE(message(r).find("max tokens"), std::string::npos);
  r.max_tokens = 4;
  r.sampling.temperature = -1;
  EXPECT_NE(message(r).find("temperature"), std::string::npos);
  r.sampling.temperature = 0;
  r.prompt.assign(1024, 5);
  EXPECT_NE(message(r).find("context"), std::string::npos);
  r.prompt = {0, 5};
  r.reference.push_back(ReferencePart::tokens({1}));
  EXPECT_NE(message(r).find("not both"), std::string::npos);
  r.prompt.clear();
  r.reference.push_back(ReferencePart::tokens({}));
  EXPECT_NE(message(r).find("reference part 2 is empty"), std::string::npos);
  EXPECT_EQ(s.stats().queued, 0);
}

// A reference of three parts: tokens, an embedding part (rows from a seed, keyed or not), tokens.
struct ThreePart {
  std::vector<int32_t> head, image, tail;
  std::string key;  // the image part's content key ("" = unkeyed)
  std::atomic<int>* produced;
  std::vector<ReferencePart> parts(Decoder& d) const {
    std::vector<ReferencePart> out;
    out.push_back(ReferencePart::tokens(head));
    const int64_t H = d.config().hidden;
    ReferencePart img = ReferencePart::lazy(std::vector<int32_t>(image.size(), 1), [&d, H, ids = image, n = produced] {
      ++*n;
      std::vector<float> rows(ids.size() * static_cast<size_t>(H));
      for (size_t i = 0; i < ids.size(); ++i) d.embed(ids[i], rows.data() + i * static_cast<size_t>(H));
      for (float& x : rows) x *= 1.25f;
      return rows;
    });
    img.key = key;
    img.unit_starts = {4, 9};
    out.push_back(std::move(img));
    out.push_back(ReferencePart::tokens(tail));
    return out;
  }
};

// Reference reuse: a request whose parts repeat an earlier request's starts from its KV (the lazy
// part is not even produced), and decodes exactly what Generator decodes alone, for every policy
// and KV storage type; a request sharing only a prefix reuses that prefix; an unkeyed part stops
// reuse there.
TEST_F(SchedulerTest, PrefixCacheReusesReferenceKV) {
  for (const char* types : {"f32", "q8"})
    for (KVPolicy policy : {KVPolicy{KVPolicyKind::RSwa, 4}, KVPolicy{KVPolicyKind::Sparse, 4, 1, 4}, KVPolicy{KVPolicyKind::Full, 4}}) {
      SCOPED_TRACE(std::string(types) + " " + policy.name());
      std::atomic<int> produced{0};
      const std::vector<int32_t> head = random_prompt(6, 31), image = random_prompt(14, 32);
      const ThreePart a{head, image, random_prompt(5, 33), "page-A", &produced};
      const ThreePart b{head, image, random_prompt(7, 34), "page-A", &produced};  // same head and image
      const ThreePart unkeyed{head, image, a.tail, "", &produced};
      const KVLayout lay(layout().n_layers, layout().n_kv_heads, layout().head_dim, parse_kv_types(types));
      auto expect = [&](const ThreePart& t) {
        ThreadPool t1(1);
        KVBlockPool p(lay, 0);
        Generator gen(dec(), p, t1);
        GenerationOptions o;
        o.policy = policy;
        o.max_tokens = 20;
        o.no_repeat_ngram = 3;
        o.no_repeat_window = 32;
        return gen.generate(t.parts(dec()), o).tokens;
      };
      const std::vector<int32_t> want_a = expect(a), want_b = expect(b), want_u = expect(unkeyed);
      ASSERT_NE(want_a, want_b) << "the tails must matter";

      ThreadPool threads(2);
      KVBlockPool pool(lay, 0);
      Collector c;
      Scheduler s(dec(), pool, threads, {policy, 4, 8, 16, 16, size_t{64} << 20});
      auto run = [&](const ThreePart& t, int index) {
        SequenceRequest r;
        r.reference = t.parts(dec());
        r.max_tokens = 20;
        r.no_repeat_ngram = 3;
        r.no_repeat_window = 32;
        return c.wait(s.submit(c.wrap(std::move(r), index)).id);
      };
      const int64_t P = static_cast<int64_t>(head.size() + image.size() + a.tail.size());
      produced = 0;
      const SequenceResult first = run(a, 0);
      EXPECT_EQ(first.tokens, want_a);
      EXPECT_EQ(first.cached_prompt_tokens, 0);
      EXPECT_EQ(produced.load(), 1);
      const uint64_t prefilled_before = s.stats().prompt_tokens;

      const SequenceResult again = run(a, 1);
      EXPECT_EQ(again.tokens, want_a) << "the very same reference, from the cache";
      // Under `full` a quantised reference's last segment is shared with the output, so it is not
      // kept: that part is prefilled again.
      const bool last_again = policy.kind == KVPolicyKind::Full && lay.types.any_quantized();
      const int64_t tail_again = last_again ? static_cast<int64_t>(a.tail.size()) : 0;
      EXPECT_EQ(again.cached_prompt_tokens, P - tail_again);
      EXPECT_EQ(produced.load(), 1) << "the embedding part was produced again";
      EXPECT_EQ(s.stats().prompt_tokens, prefilled_before + static_cast<uint64_t>(tail_again)) << "nothing else prefilled";

      const SequenceResult other = run(b, 2);
      EXPECT_EQ(other.tokens, want_b) << "a shared prefix, then its own tail";
      EXPECT_EQ(other.cached_prompt_tokens, static_cast<int64_t>(head.size() + image.size()));
      EXPECT_EQ(produced.load(), 1);

      const SequenceResult u = run(unkeyed, 3);
      EXPECT_EQ(u.tokens, want_u);
      EXPECT_EQ(u.cached_prompt_tokens, static_cast<int64_t>(head.size())) << "reuse stops at a part without a key";
      EXPECT_EQ(produced.load(), 2);

      const PrefixKVStats st = s.stats().prefix_cache;
      EXPECT_EQ(st.hits, 3u);
      EXPECT_EQ(st.misses, 1u);
      EXPECT_EQ(st.tokens_reused, static_cast<uint64_t>(again.cached_prompt_tokens + other.cached_prompt_tokens + u.cached_prompt_tokens));
      EXPECT_GT(st.bytes, 0u);
      EXPECT_LE(st.bytes, st.capacity);
      s.stop();
      EXPECT_EQ(pool.bytes_in_use(), 0u) << "the cache holds its copies outside the pool";
    }
}

// The prefix cache keeps within its byte budget, evicting the least recently used entry.
TEST_F(SchedulerTest, PrefixCacheStaysWithinItsBudget) {
  ThreadPool threads(1);
  KVBlockPool pool(layout(), 0);
  Collector c;
  // Room for about two references of 40 tokens (and their logits).
  const size_t one = pool.block_bytes(16) * static_cast<size_t>(3 * layout().n_layers) + dec().config().vocab * sizeof(float);
  Scheduler s(dec(), pool, threads, {KVPolicy{KVPolicyKind::RSwa, 4}, 4, 64, 16, 16, 2 * one + one / 2});
  std::vector<SequenceRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    SequenceRequest r;
    r.prompt = random_prompt(40, 200 + static_cast<uint32_t>(i));
    r.max_tokens = 3;
    reqs.push_back(r);
  }
  for (int i = 0; i < 4; ++i) c.wait(s.submit(c.wrap(reqs[i], i)).id);
  PrefixKVStats st = s.stats().prefix_cache;
  EXPECT_EQ(st.misses, 4u);
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(st.evictions, 2u);
  EXPECT_LE(st.bytes, st.capacity);
  // The most recent two are kept, the oldest is gone.
  EXPECT_EQ(c.wait(s.submit(c.wrap(reqs[3], 10)).id).cached_prompt_tokens, 40);
  EXPECT_EQ(c.wait(s.submit(c.wrap(reqs[0], 11)).id).cached_prompt_tokens, 0);
}

// A rolling reference through the scheduler: pages leave and enter as the model writes the page
// separator, two such requests side by side decode exactly what run_ocr decodes, and a sequence
// holds the KV of one page where rswa holds all three.
TEST_F(SchedulerTest, RollingMiniOcrMatchesRunOcr) {
  std::unique_ptr<MiniOcrModel> m = MiniOcrModel::load(shipped_path("models/folio-mini-ocr"));
  const OcrPages pages = OcrPages::open({std::string(FOLIO_SOURCE_DIR) + "/examples/sample-3page.pdf"}, "", m->pdf_dpi());
  ThreadPool threads(1);
  OcrOptions opt;
  opt.kv_dtype = DType::F32;
  opt.policy = {KVPolicyKind::Rolling, 128};
  opt.policy.resident_pages = 1;
  const OcrResult want = run_ocr(*m, pages, opt, threads);
  ASSERT_EQ(want.pages.size(), 3u);
  OcrOptions dense;
  dense.kv_dtype = DType::F32;
  const OcrResult all = run_ocr(*m, pages, dense, threads);

  KVBlockPool pool(m->decoder().kv_layout(DType::F32), 0);
  Collector c;
  std::vector<RequestId> ids;
  {
    Scheduler s(m->decoder(), pool, threads, {opt.policy, 4, 64, 8, 16});
    std::vector<OcrPass> passes;
    for (int i = 0; i < 2; ++i) passes.push_back(m->prepare_rolling(pages, 0, 3, 1, VisionMode::Base, threads, {}));
    for (int i = 0; i < 2; ++i)
      ids.push_back(s.submit(c.wrap(ocr_sequence_request(std::move(passes[static_cast<size_t>(i)]), m->max_output_tokens(3)), i)).id);
    for (RequestId id : ids) {
      SequenceResult got = c.wait(id);
      EXPECT_EQ(got.tokens, want.tokens);
      EXPECT_EQ(got.stop_reason, want.stats.stop_reasons.at(0));
      EXPECT_LT(got.kv_bytes_peak, all.stats.kv_bytes_peak) << "one resident page, not three";
    }
    EXPECT_EQ(s.stats().max_batch_seen, 2);
    // A rolling reference needs the rolling policy.
    Scheduler plain(m->decoder(), pool, threads, {KVPolicy{KVPolicyKind::RSwa, 128}, 4, 64, 8, 16});
    SequenceRequest bad;
    bad.prompt = {1, 2};
    bad.rolling = GenerationOptions::Rolling{};
    EXPECT_THROW(plain.submit(bad), Error);
  }
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

}  // namespace
}  // namespace folio
