// Generator: references made of token and embedding parts, chunked prefill, the n-gram history of
// placeholder ids, and the embed_token hook; each checked against a direct composition of
// Decoder::forward calls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "runtime/generator.h"
#include "runtime/loaded_model.h"
#include "runtime/model_factory.h"
#include "text/no_repeat_ngram.h"

namespace folio {
namespace {

namespace fs = std::filesystem;

struct Model {
  fs::path dir;
  LoadedModel m;
  Model() {
    dir = fs::temp_directory_path() / ("folio_generator_test_" + std::to_string(getpid()));
    write_random_checkpoint(preset_config("unlimited-ocr-decoder", "tiny"), dir.string(), 11, DType::F32);
    m = load_model(dir.string(), false);
  }
  ~Model() { fs::remove_all(dir); }
};

Model& model() {
  static Model m;
  return m;
}

int32_t argmax(const std::vector<float>& v) { return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

// Greedy decoding straight on the decoder: one forward over all reference rows, then one token at a
// time; optional n-gram guard over history.
std::vector<int32_t> direct_greedy(Decoder& dec, const std::vector<float>& ref_rows, std::vector<int32_t> history, int steps,
                                   KVPolicy policy, int ngram = 0, int ngram_window = 128) {
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  SequenceKV kv(pool, 1, policy);
  const int64_t H = dec.config().hidden;
  std::vector<float> logits(static_cast<size_t>(dec.config().vocab));
  Decoder::Input in;
  in.kv = &kv;
  in.embeddings = ref_rows.data();
  in.n_embeddings = static_cast<int64_t>(ref_rows.size()) / H;
  in.reference = true;
  dec.forward({&in, 1}, logits.data(), threads);
  std::vector<int32_t> out;
  for (int s = 0; s < steps; ++s) {
    if (ngram > 0) NoRepeatNGram(ngram, ngram_window).apply(history, logits);
    int32_t t = argmax(logits);
    out.push_back(t);
    history.push_back(t);
    if (t == dec.config().eos_id || s + 1 == steps) break;
    Decoder::Input step;
    step.kv = &kv;
    step.tokens = std::span<const int32_t>(&out.back(), 1);
    dec.forward({&step, 1}, logits.data(), threads);
  }
  return out;
}

std::vector<float> embed_all(const Decoder& dec, const std::vector<int32_t>& ids) {
  const int64_t H = dec.config().hidden;
  std::vector<float> rows(ids.size() * static_cast<size_t>(H));
  for (size_t i = 0; i < ids.size(); ++i) dec.embed(ids[i], rows.data() + i * H);
  return rows;
}

// Arbitrary "image" rows: deterministic values of embedding scale.
std::vector<float> fake_rows(int64_t n, int64_t H, uint32_t seed) {
  std::vector<float> r(static_cast<size_t>(n * H));
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(static_cast<int>((i * 2654435761u + seed * 40503u) % 2001) - 1000) / 600.f;
  return r;
}

GenerationOptions greedy_opts(int64_t max_tokens, KVPolicy policy = KVPolicy::parse("rswa", 8)) {
  GenerationOptions o;
  o.policy = policy;
  o.max_tokens = max_tokens;
  o.stop_at_eos = false;
  return o;
}

TEST(Generator, PartsOfTokensAndEmbeddingsMatchDirectDecoding) {
  Decoder& dec = *model().m.decoder;
  const int64_t H = dec.config().hidden;
  const std::vector<int32_t> head = {0, 17, 42, 99}, tail = {7, 300, 5};
  const int32_t placeholder = 511;
  const int64_t n_img = 37;
  const std::vector<float> img = fake_rows(n_img, H, 3);

  std::vector<ReferencePart> parts;
  parts.push_back(ReferencePart::tokens(head));
  parts.push_back(ReferencePart::rows(std::vector<int32_t>(n_img, placeholder), img));
  parts.push_back(ReferencePart::tokens(tail));

  std::vector<float> all = embed_all(dec, head);
  all.insert(all.end(), img.begin(), img.end());
  std::vector<float> t = embed_all(dec, tail);
  all.insert(all.end(), t.begin(), t.end());
  std::vector<int32_t> history = head;
  history.insert(history.end(), n_img, placeholder);
  history.insert(history.end(), tail.begin(), tail.end());
  const auto want = direct_greedy(dec, all, history, 30, KVPolicy::parse("rswa", 8));

  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  for (int64_t chunk : {int64_t{512}, int64_t{5}}) {  // one pass per part, and chunks that split parts unevenly
    GenerationOptions o = greedy_opts(30);
    o.prefill_chunk = chunk;
    GenerationResult r = gen.generate(parts, o);
    EXPECT_EQ(r.tokens, want) << "prefill chunk " << chunk;
    EXPECT_EQ(r.reference_tokens, static_cast<int64_t>(history.size()));
    EXPECT_EQ(r.stop_reason, "length");
  }
  // Rows different from the tokens' own embeddings change the result: the rows are really used.
  std::vector<ReferencePart> plain = {ReferencePart::tokens(history)};
  EXPECT_NE(gen.generate(plain, greedy_opts(30)).tokens, want);
}

// --kv-keep at 1, or at a fraction that drops no row of these parts (ceil(0.999 n) = n), is plain
// rswa token for token: the observation window is scored but nothing is rebuilt or lost. A real
// fraction drops rows and still generates.
TEST(Generator, CompressedReferenceThatDropsNothingIsPlainRswa) {
  Decoder& dec = *model().m.decoder;
  const int64_t H = dec.config().hidden;
  std::vector<ReferencePart> parts;
  parts.push_back(ReferencePart::tokens({0, 17, 42, 99}));
  parts.push_back(ReferencePart::rows(std::vector<int32_t>(37, 511), fake_rows(37, H, 3)));
  parts.push_back(ReferencePart::tokens({7, 300, 5}));
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  const std::vector<int32_t> want = gen.generate(parts, greedy_opts(30)).tokens;
  for (double keep : {1.0, 0.999, 0.25}) {
    KVPolicy p = KVPolicy::parse("rswa", 8);
    p.keep = keep;
    p.observe = 3;
    const GenerationResult r = gen.generate(parts, greedy_opts(30, p));
    ASSERT_EQ(r.tokens.size(), want.size()) << keep;
    if (keep > 0.99) {
      EXPECT_EQ(r.tokens, want) << keep;
    }
  }
}

TEST(Generator, TokenIdsAsEmbeddingRowsGiveTheSameTokens) {
  Decoder& dec = *model().m.decoder;
  const std::vector<int32_t> prompt = {0, 5, 77, 123, 400, 401, 9, 10, 11};
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  const auto by_id = gen.generate(prompt, greedy_opts(25)).tokens;
  std::vector<ReferencePart> parts = {ReferencePart::rows(prompt, embed_all(dec, prompt))};
  EXPECT_EQ(gen.generate(parts, greedy_opts(25)).tokens, by_id);
}

TEST(Generator, EmbedTokenHookWithTheDecodersTableIsIdentical) {
  Decoder& dec = *model().m.decoder;
  const std::vector<int32_t> prompt = {0, 31, 32, 33, 250};
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  const auto plain = gen.generate(prompt, greedy_opts(40)).tokens;  // 40 > W = 8: the ring wraps

  int calls = 0;
  GenerationOptions o = greedy_opts(40);
  o.embed_token = [&](int32_t tok, float* row) {
    ++calls;
    dec.embed(tok, row);
  };
  EXPECT_EQ(gen.generate(prompt, o).tokens, plain);
  EXPECT_EQ(calls, 39);  // every generated token but the last is fed back

  // A hook that feeds something else changes the output: the hook's rows are what the decoder reads.
  o.embed_token = [&](int32_t tok, float* row) { dec.embed((tok + 1) % 512, row); };
  EXPECT_NE(gen.generate(prompt, o).tokens, plain);
}

TEST(Generator, EmbeddingPartsAreProducedLazilyInOrder) {
  Decoder& dec = *model().m.decoder;
  const int64_t H = dec.config().hidden;
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  std::vector<size_t> bytes_at_call;
  auto producer = [&](uint32_t seed) {
    return [&, seed] {
      bytes_at_call.push_back(pool.bytes_in_use());
      return fake_rows(20, H, seed);
    };
  };
  std::vector<ReferencePart> parts = {ReferencePart::tokens({0, 1, 2}), ReferencePart::lazy(std::vector<int32_t>(20, 511), producer(1)),
                                      ReferencePart::lazy(std::vector<int32_t>(20, 511), producer(2))};
  GenerationResult r = gen.generate(parts, greedy_opts(3));
  ASSERT_EQ(bytes_at_call.size(), 2u);  // each producer once
  // The first page's rows were asked for after the text was prefilled, the second's after the first
  // page's: the KV had grown in between.
  EXPECT_GT(bytes_at_call[0], 0u);
  EXPECT_GT(bytes_at_call[1], bytes_at_call[0]);
  EXPECT_GE(r.produce_ms, 0.0);

  // A producer that returns the wrong number of rows is a bug, reported as such.
  std::vector<ReferencePart> bad = {ReferencePart::lazy({0, 511, 511}, [&] { return fake_rows(2, H, 1); })};
  try {
    gen.generate(bad, greedy_opts(3));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Internal);
    EXPECT_NE(std::string(e.what()).find("expected 3 rows"), std::string::npos) << e.what();
  }
}

TEST(Generator, NGramHistorySeesPlaceholderIds) {
  Decoder& dec = *model().m.decoder;
  const int64_t H = dec.config().hidden;
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  // n = 1 bans every token in the window: with a window covering the reference, no generated
  // token may equal a reference id (the placeholder included) or an earlier generated token.
  const std::vector<int32_t> head = {0, 3, 4};
  std::vector<ReferencePart> parts = {ReferencePart::tokens(head), ReferencePart::rows(std::vector<int32_t>(10, 200), fake_rows(10, H, 9))};
  GenerationOptions o = greedy_opts(60);
  o.no_repeat_ngram = 1;
  o.no_repeat_window = 1000;
  GenerationResult r = gen.generate(parts, o);
  ASSERT_EQ(r.tokens.size(), 60u);
  std::set<int32_t> seen = {0, 3, 4, 200};
  for (int32_t t : r.tokens) EXPECT_TRUE(seen.insert(t).second) << "token " << t << " repeats";

  // Independent check with the same guard over the same history.
  std::vector<float> rows = embed_all(dec, head);
  auto img = fake_rows(10, H, 9);
  rows.insert(rows.end(), img.begin(), img.end());
  std::vector<int32_t> history = head;
  history.insert(history.end(), 10, 200);
  EXPECT_EQ(r.tokens, direct_greedy(dec, rows, history, 60, KVPolicy::parse("rswa", 8), 1, 1000));
}

TEST(Generator, RejectsEmptyAndOversizedReferences) {
  Decoder& dec = *model().m.decoder;
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  EXPECT_THROW(gen.generate(std::vector<int32_t>{}, greedy_opts(3)), Error);
  std::vector<ReferencePart> empty_part = {ReferencePart::tokens({0}), ReferencePart::tokens({})};
  EXPECT_THROW(gen.generate(empty_part, greedy_opts(3)), Error);
  std::vector<ReferencePart> huge = {ReferencePart::tokens(std::vector<int32_t>(static_cast<size_t>(dec.config().max_positions), 5))};
  try {
    gen.generate(huge, greedy_opts(3));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
  }
}


}  // namespace
}  // namespace folio

namespace folio {
namespace {

// Teacher forcing: fed its own greedy output, the model predicts exactly it; fed another sequence,
// that sequence is what goes in (and comes out), and the predictions follow it.
TEST(Generator, TeacherForcingFeedsTheTeacherAndRecordsPredictions) {
  Decoder& dec = *model().m.decoder;
  const std::vector<int32_t> prompt = {0, 5, 77, 123, 400, 401, 9, 10, 11};
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  const GenerationResult free = gen.generate(prompt, greedy_opts(20));
  GenerationOptions o = greedy_opts(20);
  o.teacher = free.tokens;
  const GenerationResult self = gen.generate(prompt, o);
  EXPECT_EQ(self.tokens, free.tokens);
  EXPECT_EQ(self.predicted, free.tokens);
  std::vector<int32_t> other(free.tokens.size(), 42);
  o.teacher = other;
  const GenerationResult forced = gen.generate(prompt, o);
  EXPECT_EQ(forced.tokens, other);
  ASSERT_EQ(forced.predicted.size(), other.size());
  EXPECT_EQ(forced.predicted[0], free.tokens[0]);  // before anything was forced, the same choice
  EXPECT_NE(forced.predicted, free.tokens);        // after, the predictions follow what was fed
}

// Generator is the scheduler's loop run for one request on the caller's thread: on_token's "stop"
// ends it at once (no further forward, nothing more produced), and a pool that fills up ends it
// with the pool's own error, its blocks released.
TEST(Generator, OnTokenStopsAtOnceAndAFullPoolIsTheCallersError) {
  Decoder& dec = *model().m.decoder;
  const std::vector<int32_t> prompt = {0, 5, 77, 123, 400, 401, 9, 10, 11};
  ThreadPool threads(1);
  KVBlockPool pool(dec.kv_layout(DType::F32), 0);
  Generator gen(dec, pool, threads);
  const GenerationResult all = gen.generate(prompt, greedy_opts(12));
  int seen = 0;
  const GenerationResult stopped = gen.generate(prompt, greedy_opts(12), [&](int32_t) { return ++seen < 4; });
  EXPECT_EQ(stopped.stop_reason, "stopped");
  EXPECT_EQ(seen, 4);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(all.tokens.begin(), all.tokens.begin() + 4));
  EXPECT_EQ(pool.bytes_in_use(), 0u);

  // Room for rswa's peak twice over; full attention keeps every one of 400 generated tokens.
  KVBlockPool small(dec.kv_layout(DType::F32), all.kv_bytes_peak * 2);
  Generator tight(dec, small, threads);
  try {
    tight.generate(prompt, greedy_opts(400, KVPolicy::parse("full", 8)));
    FAIL() << "expected the pool to fill up";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::OutOfMemory) << e.what();
  }
  EXPECT_EQ(small.bytes_in_use(), 0u);
  EXPECT_EQ(tight.generate(prompt, greedy_opts(3)).tokens.size(), 3u);  // and the next call works
}

// Keys and values stored rotated (KVTypes::rotated): in f32 the same attention up to rounding, so
// the same greedy tokens and logits within 1e-4; in q4 the rotation changes what is stored (the
// rows are quantised after it), so its logits differ from plain q4's.
TEST(Generator, RotatedKVGivesTheSameAttention) {
  Decoder& dec = *model().m.decoder;
  ThreadPool threads(1);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 7) % 50);
  auto run = [&](KVTypes types, std::vector<std::vector<float>>& logits) {
    KVBlockPool pool(dec.kv_layout(types), 0);
    Generator gen(dec, pool, threads);
    GenerationOptions o;
    o.max_tokens = 12;
    o.stop_at_eos = false;
    o.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
    return gen.generate(prompt, o).tokens;
  };
  KVTypes rot = KVTypes::uniform(KVDType::F32);
  rot.rotated = true;
  std::vector<std::vector<float>> plain_l, rot_l, q4_l, q4rot_l;
  EXPECT_EQ(run(rot, rot_l), run(KVTypes::uniform(KVDType::F32), plain_l));
  ASSERT_EQ(rot_l.size(), plain_l.size());
  for (size_t s = 0; s < rot_l.size(); ++s)
    for (size_t i = 0; i < rot_l[s].size(); ++i) ASSERT_NEAR(rot_l[s][i], plain_l[s][i], 1e-4f) << "step " << s;
  KVTypes q4rot = KVTypes::uniform(KVDType::Q4);
  q4rot.rotated = true;
  run(KVTypes::uniform(KVDType::Q4), q4_l);
  run(q4rot, q4rot_l);
  double diff = 0;
  for (size_t i = 0; i < q4_l[0].size(); ++i) diff = std::max(diff, std::fabs(double(q4_l[0][i]) - q4rot_l[0][i]));
  EXPECT_GT(diff, 1e-5) << "rotated q4 stores other codes";
}

}  // namespace
}  // namespace folio
